// Device-memory bandwidth and the cost of one op call on the CPU backend, for the cost
// model's calibration (benchmarks/calibrate.sh): ops::copy of 64 MiB (read + write bytes),
// ops::gather_rows of TGN-sized memory rows (6,000 of 100 floats from a 100,000-row table),
// and ops::fill of 16 floats (what an op call costs beyond its bytes). Rate counters.
// Where a GPU is usable, for tools/gpu-bench.sh also: the GPU's copy, one kernel launch
// (ops::fill of 16 floats) and uploads from pinned staging memory (4 KiB, and 16 MiB for the
// bandwidth).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench_util.h"
#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/backend/upload.h"
#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"

namespace {

using depbloom::Device;
using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;

// range(0) floats copied on `device` (on a GPU, the host waits after each copy).
void time_copy(benchmark::State& state, Device device) {
  const int64_t n = state.range(0);
  const OwnedTensor src = dbbench::random_tensor<float>(Shape(n), 7, 1, device);
  const OwnedTensor dst = OwnedTensor::zeros(DType::f32, Shape(n), device);
  for (auto _ : state) {
    depbloom::ops::copy(dst.view(), src.view());
    if (device.is_cuda()) depbloom::backend::synchronize(device.index);
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] =
      benchmark::Counter(8.0 * static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void BM_Copy(benchmark::State& state) {
  time_copy(state, Device::cpu());
}

void BM_GatherRows(benchmark::State& state) {
  const int64_t rows = state.range(0), width = state.range(1), table_rows = 100000;
  const OwnedTensor table =
      dbbench::random_tensor<float>(Shape(table_rows, width), 7, 2, Device::cpu());
  OwnedTensor index(DType::i32, Shape(rows));
  for (int64_t i = 0; i < rows; ++i)
    index.data<int32_t>()[i] = static_cast<int32_t>((i * 7919) % table_rows);
  const OwnedTensor out = OwnedTensor::zeros(DType::f32, Shape(rows, width), Device::cpu());
  for (auto _ : state) {
    depbloom::ops::gather_rows(out.view(), table.view(), index.view());
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] = benchmark::Counter(
      8.0 * static_cast<double>(rows * width) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_SmallOp(benchmark::State& state) {
  const OwnedTensor t = OwnedTensor::zeros(DType::f32, Shape(16), Device::cpu());
  for (auto _ : state) {
    depbloom::ops::fill(t.view(), 1.0);
    benchmark::ClobberMemory();
  }
}

BENCHMARK(BM_Copy)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GatherRows)->Args({6000, 100})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SmallOp)->UseRealTime()->Unit(benchmark::kNanosecond);

// GPU calls per timed iteration before the host waits: the time per call (items_per_second's
// inverse) is then the back-to-back rate a training step's stream of calls sees, not the
// host's wait.
constexpr int kGpuCalls = 1000;

// One op call on the GPU: ops::fill of 16 floats, the smallest kernel the ops launch.
void BM_SmallOpCuda(benchmark::State& state) {
  const OwnedTensor t = OwnedTensor::zeros(DType::f32, Shape(16), Device::cuda(0));
  for (auto _ : state) {
    for (int i = 0; i < kGpuCalls; ++i) depbloom::ops::fill(t.view(), 1.0);
    depbloom::backend::synchronize(0);
  }
  state.SetItemsProcessed(state.iterations() * kGpuCalls);
}

void BM_CopyCuda(benchmark::State& state) {
  time_copy(state, Device::cuda(0));
}

// One upload of range(0) bytes from pinned staging memory, as the trainer stages a step's
// inputs (backend/upload.h: an asynchronous copy, no host wait); up to kGpuCalls (at most
// 64 MiB) per timed iteration.
void BM_UploadCuda(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const int64_t calls = std::max<int64_t>(1, std::min<int64_t>(kGpuCalls, (64 << 20) / bytes));
  const size_t room = static_cast<size_t>(bytes * (calls + 1));
  depbloom::Arena pinned(Device::cpu(), room, depbloom::HostMemory::pinned);
  depbloom::Arena device(Device::cuda(0), room);
  device.set_staging(&pinned);
  for (auto _ : state) {
    for (int64_t i = 0; i < calls; ++i) {
      const depbloom::Tensor host = pinned.alloc(DType::f32, Shape(bytes / 4));
      benchmark::DoNotOptimize(depbloom::upload(device, host).raw());
    }
    depbloom::backend::synchronize(0);
    device.reset();
    pinned.reset();
  }
  state.SetItemsProcessed(state.iterations() * calls);
  state.SetBytesProcessed(state.iterations() * calls * bytes);
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (depbloom::backend::cuda_usable(&why)) {
    benchmark::RegisterBenchmark("BM_SmallOpCuda", BM_SmallOpCuda)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_CopyCuda", BM_CopyCuda)
        ->Arg(16 << 20)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_UploadCuda", BM_UploadCuda)
        ->Arg(4096)
        ->Arg(16 << 20)
        ->ArgName("bytes")
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  } else {
    std::fprintf(stderr, "CUDA cases not run: %s\n", why.c_str());
  }
  return dbbench::run_benchmarks(argc, argv);
}
