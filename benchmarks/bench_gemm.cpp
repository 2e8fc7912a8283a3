// GEMM throughput of ops::gemm at the shapes a TGN step runs: the memory updater's input
// projection (1,800 x 372 by 372 x 100) and a large embedding projection (20,000 x 200 by
// 200 x 300); for weight gradients also the attention's key projection over a WIKI batch's
// 18,000 slots (200 x 200, k = 18,000: the CPU's k-split path). On the CPU backend
// (OpenBLAS) always; on the CUDA backend (cuBLAS, f32 with TF32 off, then on) too when a
// GPU is usable. Reports FLOP/s as a rate counter.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "bench_main.h"
#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/philox.h"

namespace {

using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;

// Deterministic values in [-1, 1): dense inputs keep OpenBLAS on its normal path.
template <class T>
OwnedTensor random_matrix(int64_t rows, int64_t cols, uint32_t stream) {
  OwnedTensor t(depbloom::DTypeOf<T>::value, Shape(rows, cols));
  T* p = t.data<T>();
  const depbloom::RngKey key{42, static_cast<uint32_t>(depbloom::RngPurpose::test), stream};
  for (int64_t i = 0; i < rows * cols; ++i)
    p[i] = static_cast<T>(2.0f * depbloom::uniform_float(depbloom::philox_u32(key, i, 0)) - 1.0f);
  return t;
}

// c [m,n] = a [m,k] b [k,n]; args: m, n, k.
template <class T>
void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  OwnedTensor a = random_matrix<T>(m, k, 1), b = random_matrix<T>(k, n, 2);
  OwnedTensor c(depbloom::DTypeOf<T>::value, Shape(m, n));
  for (auto _ : state) {
    depbloom::ops::gemm(c, a, depbloom::ops::Trans::N, b, depbloom::ops::Trans::N);
    benchmark::DoNotOptimize(c.view().raw());
    benchmark::ClobberMemory();
  }
  const double flops_per_call = 2.0 * static_cast<double>(m) * static_cast<double>(n) * k;
  state.counters["flops"] = benchmark::Counter(
      flops_per_call * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// The backward's weight gradient: dW [n,k] += dY^T [n,m] X [m,k] (transposed a, beta = 1).
template <class T>
void BM_GemmWeightGrad(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  OwnedTensor dy = random_matrix<T>(m, n, 3), x = random_matrix<T>(m, k, 4);
  OwnedTensor dw = OwnedTensor::zeros(depbloom::DTypeOf<T>::value, Shape(n, k));
  for (auto _ : state) {
    depbloom::ops::gemm(dw, dy, depbloom::ops::Trans::T, x, depbloom::ops::Trans::N, 1.0, 1.0);
    benchmark::DoNotOptimize(dw.view().raw());
    benchmark::ClobberMemory();
  }
  const double flops_per_call = 2.0 * static_cast<double>(m) * static_cast<double>(n) * k;
  state.counters["flops"] = benchmark::Counter(
      flops_per_call * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// The CUDA backend: kLaunches products per timed iteration, then one synchronize, so the
// small shapes measure the GPU rather than the host's wait. Args: m, n, k, tf32 (0/1);
// transposed_a selects the weight-gradient form (dW += dY^T X).
constexpr int kLaunches = 20;

void gemm_cuda(benchmark::State& state, bool transposed_a) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  depbloom::backend::set_tf32(state.range(3) != 0);
  const depbloom::Device gpu = depbloom::Device::cuda(0);
  const OwnedTensor ha =
      transposed_a ? random_matrix<float>(m, n, 3) : random_matrix<float>(m, k, 1);
  const OwnedTensor hb =
      transposed_a ? random_matrix<float>(m, k, 4) : random_matrix<float>(k, n, 2);
  OwnedTensor a(DType::f32, ha.view().shape(), gpu), b(DType::f32, hb.view().shape(), gpu);
  OwnedTensor c(DType::f32, transposed_a ? Shape(n, k) : Shape(m, n), gpu);
  depbloom::ops::copy(a.view(), ha.view());
  depbloom::ops::copy(b.view(), hb.view());
  depbloom::ops::fill(c.view(), 0.0);
  const auto ta = transposed_a ? depbloom::ops::Trans::T : depbloom::ops::Trans::N;
  const double beta = transposed_a ? 1.0 : 0.0;
  for (auto _ : state) {
    for (int i = 0; i < kLaunches; ++i)
      depbloom::ops::gemm(c.view(), a.view(), ta, b.view(), depbloom::ops::Trans::N, 1.0, beta);
    depbloom::backend::synchronize(0);
  }
  depbloom::backend::set_tf32(false);
  const double flops_per_call = 2.0 * static_cast<double>(m) * static_cast<double>(n) * k;
  state.counters["flops"] =
      benchmark::Counter(flops_per_call * kLaunches * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void tgn_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k"});
  b->Args({1800, 100, 372});
  b->Args({20000, 300, 200});
  b->Unit(benchmark::kMicrosecond);
  b->UseRealTime();  // OpenBLAS threads do the work; CPU time of the caller would mislead
}

void weight_grad_shapes(benchmark::internal::Benchmark* b) {
  tgn_shapes(b);
  b->Args({18000, 200, 200});
}

BENCHMARK_TEMPLATE(BM_Gemm, float)->Apply(tgn_shapes);
BENCHMARK_TEMPLATE(BM_Gemm, double)->Apply(tgn_shapes);
BENCHMARK_TEMPLATE(BM_GemmWeightGrad, float)->Apply(weight_grad_shapes);

void cuda_shapes(benchmark::internal::Benchmark* b, bool weight_grad) {
  b->ArgNames({"m", "n", "k", "tf32"});
  for (int tf32 : {0, 1}) {
    b->Args({1800, 100, 372, tf32});
    b->Args({20000, 300, 200, tf32});
    if (weight_grad) b->Args({18000, 200, 200, tf32});
  }
  b->Unit(benchmark::kMicrosecond);
  b->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (depbloom::backend::cuda_usable(&why)) {
    cuda_shapes(benchmark::RegisterBenchmark("BM_GemmCuda", gemm_cuda, false), false);
    cuda_shapes(benchmark::RegisterBenchmark("BM_GemmWeightGradCuda", gemm_cuda, true), true);
  } else {
    std::fprintf(stderr, "CUDA cases not run: %s\n", why.c_str());
  }
  return dbbench::run_benchmarks(argc, argv);
}
