// One GRU memory update of TGN, forward and backward, in rows per second: the two input
// gemms, the bias adds, the fused cell, and the backward's weight, bias and input gradients
// (B rows, message width 372, memory width 100). A second benchmark times the fused cell
// alone. On the CPU backend always; on the CUDA backend too when a GPU is usable (each timed
// iteration then ends with a synchronize).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "bench_util.h"
#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/memory.h"

namespace {

using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;
using depbloom::ops::Trans;

constexpr int64_t kInput = 372;
constexpr int64_t kHidden = 100;

// Deterministic values in [-amplitude, amplitude) on `device`.
OwnedTensor random_tensor(Shape shape, uint32_t stream, depbloom::Device device,
                          float amplitude = 1.0f) {
  return dbbench::random_tensor<float>(shape, 7, stream, device, amplitude);
}

// Everything one update touches, allocated once outside the timed loop.
struct GruUpdate {
  GruUpdate(int64_t rows, depbloom::Device dev)
      : device(dev),
        x(random_tensor(Shape(rows, kInput), 1, dev)),
        h(random_tensor(Shape(rows, kHidden), 2, dev)),
        w_ih(random_tensor(Shape(3 * kHidden, kInput), 3, dev, 0.05f)),
        w_hh(random_tensor(Shape(3 * kHidden, kHidden), 4, dev, 0.1f)),
        b_ih(random_tensor(Shape(3 * kHidden), 5, dev, 0.1f)),
        b_hh(random_tensor(Shape(3 * kHidden), 6, dev, 0.1f)),
        dh_new(random_tensor(Shape(rows, kHidden), 7, dev)),
        gx(DType::f32, Shape(rows, 3 * kHidden), dev),
        gh(DType::f32, Shape(rows, 3 * kHidden), dev),
        gates(DType::f32, Shape(rows, 4 * kHidden), dev),
        h_new(DType::f32, Shape(rows, kHidden), dev),
        d_gx(DType::f32, Shape(rows, 3 * kHidden), dev),
        d_gh(DType::f32, Shape(rows, 3 * kHidden), dev),
        dh(DType::f32, Shape(rows, kHidden), dev),
        dx(DType::f32, Shape(rows, kInput), dev),
        dw_ih(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden, kInput), dev)),
        dw_hh(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden, kHidden), dev)),
        db_ih(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden), dev)),
        db_hh(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden), dev)) {}

  // The host waits for the device's queued work (a no-op on the CPU).
  void finish() const {
    if (device.is_cuda()) depbloom::backend::synchronize(device.index);
  }

  void forward() {
    depbloom::ops::gemm(gx, x, Trans::N, w_ih, Trans::T);
    depbloom::ops::bias_add(gx, b_ih);
    depbloom::ops::gemm(gh, h, Trans::N, w_hh, Trans::T);
    depbloom::ops::bias_add(gh, b_hh);
    depbloom::ops::gru_cell_forward(h_new, gates, gx, gh, h);
  }

  void backward() {
    depbloom::ops::gru_cell_backward(d_gx, d_gh, dh, dh_new, gates, h);
    depbloom::ops::gemm(dw_ih, d_gx, Trans::T, x, Trans::N, 1.0, 1.0);
    depbloom::ops::bias_grad(db_ih, d_gx);
    depbloom::ops::gemm(dw_hh, d_gh, Trans::T, h, Trans::N, 1.0, 1.0);
    depbloom::ops::bias_grad(db_hh, d_gh);
    depbloom::ops::gemm(dx, d_gx, Trans::N, w_ih, Trans::N);
    depbloom::ops::gemm(dh, d_gh, Trans::N, w_hh, Trans::N, 1.0, 1.0);  // dh += d_gh W_hh
  }

  depbloom::Device device;
  OwnedTensor x, h, w_ih, w_hh, b_ih, b_hh, dh_new;
  OwnedTensor gx, gh, gates, h_new, d_gx, d_gh, dh, dx;
  OwnedTensor dw_ih, dw_hh, db_ih, db_hh;
};

void report_rows(benchmark::State& state, int64_t rows) {
  state.counters["rows"] =
      benchmark::Counter(static_cast<double>(rows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void gru_update(benchmark::State& state, depbloom::Device device) {
  const int64_t rows = state.range(0);
  GruUpdate gru(rows, device);
  for (auto _ : state) {
    gru.forward();
    gru.backward();
    gru.finish();
    benchmark::DoNotOptimize(gru.dx.view().raw());
    benchmark::ClobberMemory();
  }
  report_rows(state, rows);
}

void gru_cell_only(benchmark::State& state, depbloom::Device device) {
  const int64_t rows = state.range(0);
  GruUpdate gru(rows, device);
  gru.forward();
  for (auto _ : state) {
    depbloom::ops::gru_cell_forward(gru.h_new, gru.gates, gru.gx, gru.gh, gru.h);
    depbloom::ops::gru_cell_backward(gru.d_gx, gru.d_gh, gru.dh, gru.dh_new, gru.gates, gru.h);
    gru.finish();
    benchmark::DoNotOptimize(gru.d_gx.view().raw());
    benchmark::ClobberMemory();
  }
  report_rows(state, rows);
}

void register_device(const std::string& suffix, depbloom::Device device) {
  benchmark::RegisterBenchmark(("BM_GruUpdate" + suffix).c_str(), gru_update, device)
      ->ArgName("rows")
      ->Arg(600)
      ->Arg(1800)
      ->Arg(20000)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("BM_GruCellOnly" + suffix).c_str(), gru_cell_only, device)
      ->ArgName("rows")
      ->Arg(1800)
      ->Arg(20000)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_device("", depbloom::Device::cpu());
  std::string why;
  if (depbloom::backend::cuda_usable(&why))
    register_device("Cuda", depbloom::Device::cuda(0));
  else
    std::fprintf(stderr, "CUDA cases not run: %s\n", why.c_str());
  return dbbench::run_benchmarks(argc, argv);
}
