// The MPI communicator under mpirun (2 and 4 ranks, label mpi): every collective on CPU
// tensors against the plain-loop prediction, odd sizes and empty contributions included;
// the non-blocking forms; the per-kind accounting; argument errors caught before any
// communication.
#include <cstdlib>
#include <memory>

#include "collective_cases.h"
#include "depbloom/core/error.h"

namespace dbtest {
namespace {

using depbloom::DType;
using depbloom::Tensor;
using depbloom::dist::CollectiveKind;

Communicator& world() {
  static std::unique_ptr<Communicator> comm =
      depbloom::dist::make_communicator("mpi", Device::cpu());
  return *comm;
}

const Device kCpu = Device::cpu();

TEST(Mpi, RanksMatchTheLaunch) {
  Communicator& c = world();
  depbloom::dist::LaunchEnv env = depbloom::dist::launch_env();
  EXPECT_STREQ(c.name(), "mpi");
  EXPECT_TRUE(env.under_mpirun);
  EXPECT_EQ(c.size(), env.size);
  EXPECT_EQ(c.rank(), env.rank);
  EXPECT_EQ(c.local_rank(), env.local_rank);
  EXPECT_EQ(c.local_size(), env.local_size);
  EXPECT_GE(c.size(), 2) << "run this suite through mpirun -np 2 or more";
  EXPECT_EQ(depbloom::dist::auto_communicator_kind(kCpu), "mpi");
}

TEST(Mpi, AllReduceSumAndMeanOddSizes) {
  Communicator& c = world();
  for (int64_t n : {1, 7, 1001, 65537}) {
    EXPECT_TRUE(check_all_reduce<float>(c, kCpu, n, ReduceOp::sum));
    EXPECT_TRUE(check_all_reduce<float>(c, kCpu, n, ReduceOp::mean));
    EXPECT_TRUE(check_all_reduce<double>(c, kCpu, n, ReduceOp::sum));
    EXPECT_TRUE(check_all_reduce<double>(c, kCpu, n, ReduceOp::mean));
  }
}

TEST(Mpi, AllReduceEmptyBuffer) {
  EXPECT_TRUE(check_all_reduce<float>(world(), kCpu, 0, ReduceOp::sum));
}

TEST(Mpi, AllGatherEveryDtype) {
  Communicator& c = world();
  for (int64_t n : {1, 5, 333}) {
    EXPECT_TRUE(check_all_gather<float>(c, kCpu, n));
    EXPECT_TRUE(check_all_gather<double>(c, kCpu, n));
    EXPECT_TRUE(check_all_gather<int32_t>(c, kCpu, n));
    EXPECT_TRUE(check_all_gather<int64_t>(c, kCpu, n));
    EXPECT_TRUE(check_all_gather<uint8_t>(c, kCpu, n));
  }
}

TEST(Mpi, AllGatherVUnevenWithEmptyContributions) {
  Communicator& c = world();
  const std::vector<int64_t> counts = uneven_counts(c.size());
  ASSERT_EQ(counts[1], 0);  // rank 1 contributes nothing
  EXPECT_TRUE(check_all_gather_v<float>(c, kCpu, counts));
  EXPECT_TRUE(check_all_gather_v<double>(c, kCpu, counts));
  EXPECT_TRUE(check_all_gather_v<int32_t>(c, kCpu, counts));
  EXPECT_TRUE(check_all_gather_v<int64_t>(c, kCpu, counts));
  EXPECT_TRUE(check_all_gather_v<uint8_t>(c, kCpu, counts));
  // Rows of a wide table: only the last rank writes, many elements.
  std::vector<int64_t> last_only(static_cast<size_t>(c.size()), 0);
  last_only.back() = 100 * 172;
  EXPECT_TRUE(check_all_gather_v<float>(c, kCpu, last_only));
  // Nobody contributes: nothing moves, nothing breaks.
  EXPECT_TRUE(check_all_gather_v<float>(c, kCpu, std::vector<int64_t>(c.size(), 0)));
}

TEST(Mpi, BroadcastFromNonZeroRoot) {
  Communicator& c = world();
  const int root = c.size() - 1;
  EXPECT_TRUE(check_broadcast<float>(c, kCpu, 1001, root));
  EXPECT_TRUE(check_broadcast<int64_t>(c, kCpu, 3, root));
  EXPECT_TRUE(check_broadcast<uint8_t>(c, kCpu, 17, 1));
}

TEST(Mpi, NonBlockingForms) {
  Communicator& c = world();
  EXPECT_TRUE(check_all_reduce<float>(c, kCpu, 999, ReduceOp::sum, true));
  EXPECT_TRUE(check_all_reduce<double>(c, kCpu, 31, ReduceOp::mean, true));
  EXPECT_TRUE(check_all_gather_v<int64_t>(c, kCpu, uneven_counts(c.size()), true));
  // Two collectives in flight at once, completed in the opposite order.
  const int64_t n = 4097;
  depbloom::OwnedTensor a = to_device(contribution<float>(c.rank(), n), kCpu);
  const std::vector<int64_t> counts = uneven_counts(c.size());
  depbloom::OwnedTensor send =
      to_device(contribution<double>(c.rank(), counts[static_cast<size_t>(c.rank())]), kCpu);
  int64_t total = 0;
  for (int64_t k : counts) total += k;
  depbloom::OwnedTensor recv(DType::f64, Shape(total), kCpu);
  CommHandle ha = c.iall_reduce(a.view(), ReduceOp::mean);
  CommHandle hb = c.iall_gather_v(send.view(), recv.view(), counts);
  hb.wait();
  ha.wait();
  EXPECT_TRUE(same_values(to_host<float>(a.view()), reduced<float>(c.size(), n, ReduceOp::mean),
                          1e-6, "overlapped all_reduce"));
  EXPECT_TRUE(same_values(to_host<double>(recv.view()), gathered<double>(counts), 0.0,
                          "overlapped all_gather_v"));
  // A handle dropped without wait() completes in its destructor.
  depbloom::OwnedTensor d = to_device(contribution<float>(c.rank(), 5), kCpu);
  { CommHandle dropped = c.iall_reduce(d.view()); }
  EXPECT_TRUE(same_values(to_host<float>(d.view()), reduced<float>(c.size(), 5, ReduceOp::sum),
                          1e-6, "dropped handle"));
}

TEST(Mpi, AllGatherCounts) {
  Communicator& c = world();
  std::vector<int64_t> got = c.all_gather_counts(10 * c.rank() + 3);
  ASSERT_EQ(static_cast<int>(got.size()), c.size());
  for (int r = 0; r < c.size(); ++r) EXPECT_EQ(got[static_cast<size_t>(r)], 10 * r + 3);
}

TEST(Mpi, StatsCountCallsAndBytesPerKind) {
  Communicator& c = world();
  c.barrier();
  c.reset_stats();
  EXPECT_EQ(c.stats().total_calls(), 0);
  const int P = c.size();
  std::vector<float> g(10);
  c.all_reduce(Tensor::wrap(g.data(), Shape(10)));
  c.all_reduce(Tensor::wrap(g.data(), Shape(4)), ReduceOp::mean);
  c.iall_reduce(Tensor::wrap(g.data(), Shape(3))).wait();
  std::vector<int64_t> one(1, 0), all(static_cast<size_t>(P));
  c.all_gather(Tensor::wrap(one.data(), Shape(1)), Tensor::wrap(all.data(), Shape(P)));
  const std::vector<int64_t> counts = uneven_counts(P);
  int64_t total = 0;
  for (int64_t k : counts) total += k;
  std::vector<double> send(static_cast<size_t>(counts[static_cast<size_t>(c.rank())]));
  std::vector<double> recv(static_cast<size_t>(total));
  c.all_gather_v(Tensor::wrap(send.data(), Shape(static_cast<int64_t>(send.size()))),
                 Tensor::wrap(recv.data(), Shape(total)), counts);
  std::vector<uint8_t> bytes(6);
  c.broadcast(Tensor::wrap(bytes.data(), Shape(6)), 0);
  c.barrier();

  const depbloom::dist::CommStats& s = c.stats();
  EXPECT_EQ(s[CollectiveKind::all_reduce].calls, 3);
  EXPECT_EQ(s[CollectiveKind::all_reduce].nonblocking, 1);
  EXPECT_EQ(s[CollectiveKind::all_reduce].bytes, (10 + 4 + 3) * 4);
  EXPECT_EQ(s[CollectiveKind::all_gather].calls, 1);
  EXPECT_EQ(s[CollectiveKind::all_gather].bytes, P * 8);
  EXPECT_EQ(s[CollectiveKind::all_gather_v].calls, 1);
  EXPECT_EQ(s[CollectiveKind::all_gather_v].bytes, total * 8);  // same on every rank
  EXPECT_EQ(s[CollectiveKind::broadcast].calls, 1);
  EXPECT_EQ(s[CollectiveKind::broadcast].bytes, 6);
  EXPECT_EQ(s[CollectiveKind::barrier].calls, 1);
  EXPECT_EQ(s[CollectiveKind::barrier].bytes, 0);
  EXPECT_EQ(s.total_calls(), 7);
  EXPECT_EQ(s.total_bytes(), 17 * 4 + P * 8 + total * 8 + 6);
  c.reset_stats();
  EXPECT_EQ(c.stats().total_bytes(), 0);
}

// Argument errors are found on each rank before it communicates, so every rank can check
// them without the others hanging.
TEST(Mpi, BadArgumentsThrowBeforeCommunicating) {
  Communicator& c = world();
  std::vector<int32_t> ints(4);
  EXPECT_THROW(c.all_reduce(Tensor::wrap(ints.data(), Shape(4))), depbloom::Error);
  std::vector<float> f(8);
  EXPECT_THROW(c.all_gather(Tensor::wrap(f.data(), Shape(3)), Tensor::wrap(f.data(), Shape(8))),
               depbloom::Error);
  std::vector<int64_t> wrong_len(static_cast<size_t>(c.size()) + 1, 0);
  EXPECT_THROW(
      c.all_gather_v(Tensor::wrap(f.data(), Shape(0)), Tensor::wrap(f.data(), Shape(0)), wrong_len),
      depbloom::Error);
  std::vector<int64_t> counts(static_cast<size_t>(c.size()), 1);
  EXPECT_THROW(c.all_gather_v(Tensor::wrap(f.data(), Shape(2)),
                              Tensor::wrap(f.data(), Shape(c.size())), counts),
               depbloom::Error);  // sends 2, its count says 1
  EXPECT_THROW(c.broadcast(Tensor::wrap(f.data(), Shape(2)), c.size()), depbloom::Error);
  try {
    c.broadcast(Tensor::wrap(f.data(), Shape(2)), -1);
    ADD_FAILURE() << "no error for root -1";
  } catch (const depbloom::Error& e) {
    EXPECT_NE(e.message().find("root -1"), std::string::npos) << e.message();
  }
  EXPECT_THROW(depbloom::dist::make_communicator("local", kCpu), depbloom::Error);
  c.barrier();  // still in step
  EXPECT_TRUE(check_all_reduce<float>(c, kCpu, 3, ReduceOp::sum));
}

}  // namespace
}  // namespace dbtest

namespace dbtest {
namespace {

// Run on its own (tests/CMakeLists.txt: mpi_abort_np2): the last rank aborts while the
// others wait in a barrier; mpirun must end every rank with the abort's code, not hang.
TEST(MpiAbort, OneRankBringsEveryRankDown) {
  if (std::getenv("DEPBLOOM_TEST_ABORT") == nullptr) GTEST_SKIP() << "run by mpi_abort_np2";
  Communicator& c = world();
  if (c.rank() == c.size() - 1) c.abort(9, "failing on purpose in the abort test");
  c.barrier();
  ADD_FAILURE() << "the barrier returned although a rank aborted";
}

}  // namespace
}  // namespace dbtest
