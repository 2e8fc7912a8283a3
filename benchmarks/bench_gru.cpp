// One GRU memory update of TGN on the CPU backend, forward and backward, in rows per second:
// the two input gemms, the bias adds, the fused cell, and the backward's weight, bias and
// input gradients (B rows, message width 372, memory width 100). A second benchmark times
// the fused cell alone.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "depbloom/backend/ops.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/philox.h"

namespace {

using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;
using depbloom::ops::Trans;

constexpr int64_t kInput = 372;
constexpr int64_t kHidden = 100;

OwnedTensor random_tensor(Shape shape, uint32_t stream, float amplitude = 1.0f) {
  OwnedTensor t(DType::f32, shape);
  float* p = t.data<float>();
  const depbloom::RngKey key{7, static_cast<uint32_t>(depbloom::RngPurpose::test), stream};
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = amplitude * (2.0f * depbloom::uniform_float(depbloom::philox_u32(key, i, 0)) - 1.0f);
  return t;
}

// Everything one update touches, allocated once outside the timed loop.
struct GruUpdate {
  explicit GruUpdate(int64_t rows)
      : x(random_tensor(Shape(rows, kInput), 1)),
        h(random_tensor(Shape(rows, kHidden), 2)),
        w_ih(random_tensor(Shape(3 * kHidden, kInput), 3, 0.05f)),
        w_hh(random_tensor(Shape(3 * kHidden, kHidden), 4, 0.1f)),
        b_ih(random_tensor(Shape(3 * kHidden), 5, 0.1f)),
        b_hh(random_tensor(Shape(3 * kHidden), 6, 0.1f)),
        dh_new(random_tensor(Shape(rows, kHidden), 7)),
        gx(DType::f32, Shape(rows, 3 * kHidden)),
        gh(DType::f32, Shape(rows, 3 * kHidden)),
        gates(DType::f32, Shape(rows, 4 * kHidden)),
        h_new(DType::f32, Shape(rows, kHidden)),
        d_gx(DType::f32, Shape(rows, 3 * kHidden)),
        d_gh(DType::f32, Shape(rows, 3 * kHidden)),
        dh(DType::f32, Shape(rows, kHidden)),
        dx(DType::f32, Shape(rows, kInput)),
        dw_ih(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden, kInput))),
        dw_hh(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden, kHidden))),
        db_ih(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden))),
        db_hh(OwnedTensor::zeros(DType::f32, Shape(3 * kHidden))) {}

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

  OwnedTensor x, h, w_ih, w_hh, b_ih, b_hh, dh_new;
  OwnedTensor gx, gh, gates, h_new, d_gx, d_gh, dh, dx;
  OwnedTensor dw_ih, dw_hh, db_ih, db_hh;
};

void report_rows(benchmark::State& state, int64_t rows) {
  state.counters["rows"] =
      benchmark::Counter(static_cast<double>(rows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void BM_GruUpdate(benchmark::State& state) {
  const int64_t rows = state.range(0);
  GruUpdate gru(rows);
  for (auto _ : state) {
    gru.forward();
    gru.backward();
    benchmark::DoNotOptimize(gru.dx.view().raw());
    benchmark::ClobberMemory();
  }
  report_rows(state, rows);
}

void BM_GruCellOnly(benchmark::State& state) {
  const int64_t rows = state.range(0);
  GruUpdate gru(rows);
  gru.forward();
  for (auto _ : state) {
    depbloom::ops::gru_cell_forward(gru.h_new, gru.gates, gru.gx, gru.gh, gru.h);
    depbloom::ops::gru_cell_backward(gru.d_gx, gru.d_gh, gru.dh, gru.dh_new, gru.gates, gru.h);
    benchmark::DoNotOptimize(gru.d_gx.view().raw());
    benchmark::ClobberMemory();
  }
  report_rows(state, rows);
}

BENCHMARK(BM_GruUpdate)
    ->ArgName("rows")
    ->Arg(600)
    ->Arg(1800)
    ->Arg(20000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_GruCellOnly)
    ->ArgName("rows")
    ->Arg(1800)
    ->Arg(20000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
