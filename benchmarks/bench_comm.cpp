// The collectives' cost between ranks of this machine, for the cost model's calibration
// (benchmarks/calibrate.sh): under `mpirun -np P`, rank 0 prints one JSON line per
// collective and size with the median seconds of one call (all-reduce of a float buffer;
// all-gather-v where every rank sends an equal share of the gathered bytes). Without mpirun
// it runs on the local communicator (one rank, nothing moves).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "depbloom/core/memory.h"
#include "depbloom/core/timer.h"
#include "depbloom/dist/communicator.h"

namespace {

using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;

template <class Call>
double median_seconds(depbloom::dist::Communicator& comm, int reps, Call call) {
  std::vector<double> t;
  for (int i = 0; i < reps + 2; ++i) {
    comm.barrier();
    depbloom::Stopwatch watch;
    call();
    if (i >= 2) t.push_back(watch.seconds());  // two warm-up calls
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  const bool mpi = depbloom::dist::launched_by_mpirun();
  auto comm = depbloom::dist::make_communicator(mpi ? "mpi" : "local", depbloom::Device::cpu());
  const int p = comm->size();
  for (const int64_t bytes : {int64_t{8}, int64_t{4096}, int64_t{1} << 20, int64_t{8} << 20}) {
    const int64_t n = std::max<int64_t>(bytes / 4, p);
    const int reps = bytes >= (1 << 20) ? 20 : 200;
    OwnedTensor buf = OwnedTensor::zeros(DType::f32, Shape(n));
    const double reduce = median_seconds(*comm, reps, [&] { comm->all_reduce(buf.view()); });
    const int64_t share = n / p;
    OwnedTensor send = OwnedTensor::zeros(DType::f32, Shape(share));
    OwnedTensor recv = OwnedTensor::zeros(DType::f32, Shape(share * p));
    const std::vector<int64_t> counts(static_cast<size_t>(p), share);
    const double gather =
        median_seconds(*comm, reps, [&] { comm->all_gather_v(send.view(), recv.view(), counts); });
    if (comm->rank() != 0) continue;
    std::printf("{\"collective\":\"all_reduce\",\"ranks\":%d,\"bytes\":%lld,\"seconds\":%.9g}\n", p,
                static_cast<long long>(n * 4), reduce);
    std::printf("{\"collective\":\"all_gather_v\",\"ranks\":%d,\"bytes\":%lld,\"seconds\":%.9g}\n",
                p, static_cast<long long>(share * p * 4), gather);
  }
  comm->barrier();
  return 0;
}
