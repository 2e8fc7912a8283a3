// GPU suite, data movement, loss, optimiser and basic ops: gather/scatter (deterministic
// scatter bitwise repeatable), scatter_rows (overwrite, distinct indices), copy_rows,
// concat/split, BCE, Adam and fill/copy/axpy/scale/sum/sum_squares on cuda:0 against the CPU
// ops. Every test skips without a usable GPU.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using F = Both<float>;

class GpuRows : public GpuTest {};

template <class I>
Both<I> indices(Rand& rng, int64_t n, int64_t N) {
  Guarded<I> idx{Shape(n)};
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<I>(rng.below(7) == 0 ? -1 : rng.below(N));
  return Both<I>(std::move(idx));
}

template <class I>
void gather_scatter_case(Rand& rng, int64_t N, int64_t W, int64_t n) {
  SCOPED_TRACE(testing::Message() << "N " << N << " W " << W << " n " << n << " index bytes "
                                  << sizeof(I));
  Both<I> idx = indices<I>(rng, n, N);
  F src(Shape(N, W), rng.vec(N * W)), out = F::nan(Shape(n, W));
  ops::gather_rows(out.cpu, src.cpu, idx.cpu);
  ops::gather_rows(out.gpu, src.gpu, idx.gpu);
  EXPECT_TRUE(out.matches_bitwise());
  F sum(Shape(n, W), rng.vec(n * W));  // accumulating: one addition per element, same bits
  ops::gather_rows(sum.cpu, src.cpu, idx.cpu, /*accumulate=*/true);
  ops::gather_rows(sum.gpu, src.gpu, idx.gpu, /*accumulate=*/true);
  EXPECT_TRUE(sum.matches_bitwise());
  F dst(Shape(N, W), rng.vec(N * W));
  ops::scatter_add_rows(dst.cpu, out.cpu, idx.cpu, true);
  ops::scatter_add_rows(dst.gpu, out.gpu, idx.gpu, true);
  EXPECT_TRUE(dst.matches_norm());
  F sums(Shape(N, W), rng.vec(N * W));  // cleared first
  ops::scatter_sum_rows(sums.cpu, out.cpu, idx.cpu);
  ops::scatter_sum_rows(sums.gpu, out.gpu, idx.gpu);
  EXPECT_TRUE(sums.matches_norm());
}

// The message assembly's gather: three tables side by side, i32 and i64 indices mixed.
TEST_F(GpuRows, GatherCols) {
  Rand rng(3012);
  for (auto [N, n] : {std::pair<int64_t, int64_t>{1, 1}, {33, 257}, {100, 3000}}) {
    SCOPED_TRACE(testing::Message() << "N " << N << " n " << n);
    Both<int32_t> self = indices<int32_t>(rng, n, N), other = indices<int32_t>(rng, n, N);
    Both<int64_t> edge = indices<int64_t>(rng, n, N);
    F table(Shape(N, 100), rng.vec(N * 100)), feat(Shape(N, 7), rng.vec(N * 7));
    F out = F::nan(Shape(n, 207));
    ops::gather_cols(out.cpu,
                     {{table.cpu, self.cpu}, {table.cpu, other.cpu}, {feat.cpu, edge.cpu}});
    ops::gather_cols(out.gpu,
                     {{table.gpu, self.gpu}, {table.gpu, other.gpu}, {feat.gpu, edge.gpu}});
    EXPECT_TRUE(out.matches_bitwise());
  }
}

TEST_F(GpuRows, GatherAndScatter) {
  Rand rng(3200);
  gather_scatter_case<int32_t>(rng, 1, 1, 1);
  gather_scatter_case<int64_t>(rng, 7, 33, 257);
  gather_scatter_case<int32_t>(rng, 257, 7, 100);
  gather_scatter_case<int64_t>(rng, 100, 257, 33);
}

// Distinct indices in [0, N) with about one in seven -1; -1 once the N rows are used up.
template <class I>
Both<I> distinct_indices(Rand& rng, int64_t n, int64_t N) {
  std::vector<int64_t> perm(static_cast<size_t>(N));
  for (int64_t r = 0; r < N; ++r) perm[static_cast<size_t>(r)] = r;
  for (int64_t r = N - 1; r > 0; --r) std::swap(perm[r], perm[rng.below(r + 1)]);
  Guarded<I> idx{Shape(n)};
  size_t next = 0;
  for (int64_t i = 0; i < n; ++i)
    idx[i] = static_cast<I>(rng.below(7) == 0 || next == perm.size() ? -1 : perm[next++]);
  return Both<I>(std::move(idx));
}

// The node state's reads and writes: four tables (widths 100, 1, 172, 1) moved by one
// mapping, as a gather, a scatter to distinct rows, and both.
TEST_F(GpuRows, CopyRows) {
  Rand rng(3013);
  for (auto [N, n] : {std::pair<int64_t, int64_t>{1, 1}, {300, 257}, {4000, 3000}}) {
    SCOPED_TRACE(testing::Message() << "N " << N << " n " << n);
    const int64_t widths[4] = {100, 1, 172, 1};
    std::vector<F> table, rows, dst;
    for (const int64_t w : widths) {
      table.emplace_back(Shape(N, w), rng.vec(N * w));
      rows.push_back(F::nan(Shape(n, w)));
      dst.emplace_back(Shape(N, w), rng.vec(N * w));
    }
    auto parts = [&](std::vector<F>& to, std::vector<F>& from, bool gpu) {
      auto side = [gpu](F& t) -> Tensor { return gpu ? t.gpu.view() : t.cpu.view(); };
      return std::array<ops::RowsPart, 4>{
          ops::RowsPart{side(to[0]), side(from[0])}, ops::RowsPart{side(to[1]), side(from[1])},
          ops::RowsPart{side(to[2]), side(from[2])}, ops::RowsPart{side(to[3]), side(from[3])}};
    };
    Both<int64_t> from = indices<int64_t>(rng, n, N);
    Both<int32_t> to = distinct_indices<int32_t>(rng, n, N);
    for (const bool gpu : {false, true}) {
      const auto p = parts(rows, table, gpu);
      ops::copy_rows({p[0], p[1], p[2], p[3]}, Tensor{}, gpu ? from.gpu.view() : from.cpu.view());
      const auto q = parts(dst, rows, gpu);
      ops::copy_rows({q[0], q[1]}, gpu ? to.gpu.view() : to.cpu.view(), Tensor{});
      const auto r = parts(dst, table, gpu);
      ops::copy_rows({r[2], r[3]}, gpu ? to.gpu.view() : to.cpu.view(),
                     gpu ? from.gpu.view() : from.cpu.view());
    }
    for (int t = 0; t < 4; ++t) {
      EXPECT_TRUE(rows[t].matches_bitwise()) << "gathered table " << t;
      EXPECT_TRUE(dst[t].matches_bitwise()) << "written table " << t;
    }
  }
}

// dst starts random on both sides; rows not named by idx must keep their values. A copy is
// exact, so the CUDA result must equal the CPU one bit for bit. W == 0 means 1-D tensors.
template <class I>
void scatter_rows_case(Rand& rng, int64_t N, int64_t W, int64_t n) {
  SCOPED_TRACE(testing::Message() << "N " << N << " W " << W << " n " << n << " index bytes "
                                  << sizeof(I));
  const int64_t width = W == 0 ? 1 : W;
  Both<I> idx = distinct_indices<I>(rng, n, N);
  F src(W == 0 ? Shape(n) : Shape(n, W), rng.vec(n * width));
  F dst(W == 0 ? Shape(N) : Shape(N, W), rng.vec(N * width));
  ops::scatter_rows(dst.cpu, src.cpu, idx.cpu);
  ops::scatter_rows(dst.gpu, src.gpu, idx.gpu);
  EXPECT_TRUE(dst.matches_bitwise());
}

TEST_F(GpuRows, ScatterRows) {
  Rand rng(3206);
  scatter_rows_case<int32_t>(rng, 1, 1, 1);
  scatter_rows_case<int64_t>(rng, 7, 33, 257);
  scatter_rows_case<int32_t>(rng, 257, 7, 100);
  scatter_rows_case<int64_t>(rng, 100, 257, 33);
  scatter_rows_case<int32_t>(rng, 33, 0, 257);  // 1-D
  scatter_rows_case<int64_t>(rng, 20000, 64, 15000);
}

// deterministic = true sorts instead of using atomics: two runs give the same bits.
TEST_F(GpuRows, DeterministicScatterIsBitwiseRepeatable) {
  Rand rng(3201);
  const int64_t N = 7, W = 33, n = 5000;  // many duplicates per destination row
  Both<int64_t> idx = indices<int64_t>(rng, n, N);
  F src(Shape(n, W), rng.vec(n * W, -100.0, 100.0));
  auto init = rng.vec(N * W);
  F a(Shape(N, W), init), b(Shape(N, W), init), fast(Shape(N, W), init);
  ops::scatter_add_rows(a.gpu, src.gpu, idx.gpu, true);
  ops::scatter_add_rows(b.gpu, src.gpu, idx.gpu, true);
  EXPECT_TRUE(bitwise_equal(a.gpu.download().values(), b.gpu.download().values()));
  ops::scatter_add_rows(fast.cpu, src.cpu, idx.cpu, false);
  ops::scatter_add_rows(fast.gpu, src.gpu, idx.gpu, false);  // atomics: close, not bitwise
  EXPECT_TRUE(fast.matches_norm());
}

TEST_F(GpuRows, ConcatAndSplit) {
  Rand rng(3202);
  for (int64_t R : {1, 33, 257}) {
    SCOPED_TRACE(testing::Message() << "R " << R);
    F p0(Shape(R, 7), rng.vec(R * 7)), p1(Shape(R), rng.vec(R)),
        p2(Shape(R, 100), rng.vec(R * 100));
    F out = F::nan(Shape(R, 108));
    ops::concat_cols(out.cpu, {p0.cpu, p1.cpu, p2.cpu});
    ops::concat_cols(out.gpu, {p0.gpu, p1.gpu, p2.gpu});
    EXPECT_TRUE(out.matches_bitwise());
    F s0 = F::nan(Shape(R, 7)), s1 = F::nan(Shape(R)), s2 = F::nan(Shape(R, 100));
    ops::split_cols({s0.cpu, s1.cpu, s2.cpu}, out.cpu);
    ops::split_cols({s0.gpu, s1.gpu, s2.gpu}, out.gpu);
    EXPECT_TRUE(s0.matches_bitwise());
    EXPECT_TRUE(s1.matches_bitwise());
    EXPECT_TRUE(s2.matches_bitwise());
  }
}

TEST_F(GpuRows, BceWithLogits) {
  Rand rng(3203);
  for (int64_t n : {1, 33, 257}) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    auto xs = rng.vec(n, -8.0, 8.0);
    const double big[] = {1e4, -1e4, 100.0, -100.0, 89.0, -89.0};
    for (int64_t i = 0; i < n; i += 5) xs[i] = big[(i / 5) % 6];
    std::vector<double> ys(static_cast<size_t>(n));
    for (auto& y : ys) y = rng.uniform(0.0, 1.0);
    F x(Shape(n), xs), y(Shape(n), ys), loss = F::nan(Shape(1)), dx = F::nan(Shape(n));
    ops::bce_with_logits_forward(loss.cpu, x.cpu, y.cpu);
    ops::bce_with_logits_forward(loss.gpu, x.gpu, y.gpu);
    EXPECT_TRUE(loss.matches_norm());
    ops::bce_with_logits_backward(dx.cpu, x.cpu, y.cpu, 1.0 / static_cast<double>(n));
    ops::bce_with_logits_backward(dx.gpu, x.gpu, y.gpu, 1.0 / static_cast<double>(n));
    EXPECT_TRUE(dx.matches());
    // Both in one pass on the device: the same values as the two ops there.
    F both_loss = F::nan(Shape(1)), both_dx = F::nan(Shape(n));
    ops::bce_with_logits_loss_and_grad(both_loss.gpu, both_dx.gpu, x.gpu, y.gpu,
                                       1.0 / static_cast<double>(n));
    EXPECT_TRUE(bitwise_equal(both_loss.gpu.download().values(), loss.gpu.download().values()));
    EXPECT_TRUE(bitwise_equal(both_dx.gpu.download().values(), dx.gpu.download().values()));
  }
}

TEST_F(GpuRows, AdamThreeSteps) {
  Rand rng(3204);
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE(testing::Message() << "decay mode " << mode);
    ops::AdamConfig cfg;
    cfg.lr = 1e-2;
    cfg.weight_decay = mode == 0 ? 0.0 : 0.1;
    cfg.decoupled = mode == 2;
    const int64_t P = 257;
    F p(Shape(P), rng.vec(P)), m(Shape(P), std::vector<double>(P, 0.0));
    F v(Shape(P), std::vector<double>(P, 0.0));
    for (int64_t step = 1; step <= 3; ++step) {
      F g(Shape(P), rng.vec(P));
      ops::adam_step(p.cpu, g.cpu, m.cpu, v.cpu, cfg, step);
      ops::adam_step(p.gpu, g.gpu, m.gpu, v.gpu, cfg, step);
    }
    EXPECT_TRUE(p.matches());
    EXPECT_TRUE(m.matches());
    EXPECT_TRUE(v.matches());
  }
}

TEST_F(GpuRows, BasicOps) {
  Rand rng(3205);
  for (Shape s : {Shape(1), Shape(33, 7), Shape(257, 7), Shape(3, 7, 33)}) {
    SCOPED_TRACE(s.str());
    const int64_t n = s.numel();
    F x(s, rng.vec(n)), y(s, rng.vec(n)), out = F::nan(Shape(1));
    ops::axpy(y.cpu, -1.75, x.cpu);
    ops::axpy(y.gpu, -1.75, x.gpu);
    EXPECT_TRUE(y.matches());
    ops::scale(y.cpu, 0.3);
    ops::scale(y.gpu, 0.3);
    EXPECT_TRUE(y.matches());
    double sabs = 0.0;
    for (double e : x.cpu.values()) sabs += std::fabs(e);
    ops::sum(out.cpu, x.cpu);
    ops::sum(out.gpu, x.gpu);
    double got = out.gpu.download()[0];
    EXPECT_LE(std::fabs(got - out.cpu[0]), 1e-5 * sabs) << got << " vs " << out.cpu[0];
    ops::sum_squares(out.cpu, x.cpu);
    ops::sum_squares(out.gpu, x.gpu);
    EXPECT_TRUE(out.matches_norm());
    ops::fill(x.cpu, -2.375);
    ops::fill(x.gpu, -2.375);
    EXPECT_TRUE(x.matches_bitwise());
    F z(s, rng.vec(n)), c = F::nan(s);
    ops::copy(c.gpu, z.gpu);  // device to device
    ops::copy(c.cpu, z.cpu);
    EXPECT_TRUE(c.matches_bitwise());
    ops::copy(c.gpu, c.gpu);  // onto itself: nothing changes
    EXPECT_TRUE(c.matches_bitwise());
  }
}

}  // namespace
}  // namespace dbtest
