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

#include "bench_util.h"
#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/memory.h"

namespace {

using depbloom::Device;
using depbloom::OwnedTensor;
using depbloom::Shape;

// Deterministic values in [-1, 1) on `device`.
template <class T>
OwnedTensor random_matrix(int64_t rows, int64_t cols, uint32_t stream, Device device) {
  return dbbench::random_tensor<T>(Shape(rows, cols), 42, stream, device);
}

// Args m, n, k. The forward form c [m,n] = a [m,k] b [k,n], or the backward's weight
// gradient dW [n,k] += dY^T [n,m] X [m,k] (transposed a, beta = 1). `launches` products per
// timed iteration, then the host waits for the device (on CUDA: so the small shapes measure
// the GPU rather than the host's wait).
template <class T>
void time_gemm(benchmark::State& state, Device device, bool weight_grad, int launches) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const OwnedTensor a =
      weight_grad ? random_matrix<T>(m, n, 3, device) : random_matrix<T>(m, k, 1, device);
  const OwnedTensor b =
      weight_grad ? random_matrix<T>(m, k, 4, device) : random_matrix<T>(k, n, 2, device);
  const OwnedTensor c = OwnedTensor::zeros(depbloom::DTypeOf<T>::value,
                                           weight_grad ? Shape(n, k) : Shape(m, n), device);
  const auto ta = weight_grad ? depbloom::ops::Trans::T : depbloom::ops::Trans::N;
  const double beta = weight_grad ? 1.0 : 0.0;
  for (auto _ : state) {
    for (int i = 0; i < launches; ++i)
      depbloom::ops::gemm(c.view(), a.view(), ta, b.view(), depbloom::ops::Trans::N, 1.0, beta);
    if (device.is_cuda()) depbloom::backend::synchronize(device.index);
    benchmark::DoNotOptimize(c.view().raw());
    benchmark::ClobberMemory();
  }
  const double flops_per_call = 2.0 * static_cast<double>(m) * static_cast<double>(n) * k;
  state.counters["flops"] =
      benchmark::Counter(flops_per_call * launches * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

template <class T>
void BM_Gemm(benchmark::State& state) {
  time_gemm<T>(state, Device::cpu(), false, 1);
}

template <class T>
void BM_GemmWeightGrad(benchmark::State& state) {
  time_gemm<T>(state, Device::cpu(), true, 1);
}

// The CUDA backend, f32; arg 3 switches TF32 on (1) or off (0).
constexpr int kLaunches = 20;

void gemm_cuda(benchmark::State& state, bool weight_grad) {
  depbloom::backend::set_tf32(state.range(3) != 0);
  time_gemm<float>(state, Device::cuda(0), weight_grad, kLaunches);
  depbloom::backend::set_tf32(false);
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
