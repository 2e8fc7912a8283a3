// Device-memory bandwidth and the cost of one op call on the CPU backend, for the cost
// model's calibration (benchmarks/calibrate.sh): ops::copy of 64 MiB (read + write bytes),
// ops::gather_rows of TGN-sized memory rows (6,000 of 100 floats from a 100,000-row table),
// and ops::fill of 16 floats (what an op call costs beyond its bytes). Rate counters.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "bench_util.h"
#include "depbloom/backend/ops.h"
#include "depbloom/core/memory.h"

namespace {

using depbloom::Device;
using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;

void BM_Copy(benchmark::State& state) {
  const int64_t n = state.range(0);
  const OwnedTensor src = dbbench::random_tensor<float>(Shape(n), 7, 1, Device::cpu());
  const OwnedTensor dst = OwnedTensor::zeros(DType::f32, Shape(n), Device::cpu());
  for (auto _ : state) {
    depbloom::ops::copy(dst.view(), src.view());
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] =
      benchmark::Counter(8.0 * static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
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

}  // namespace

int main(int argc, char** argv) {
  return dbbench::run_benchmarks(argc, argv);
}
