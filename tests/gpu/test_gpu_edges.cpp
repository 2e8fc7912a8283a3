// GPU suite, the contract's edges: in-place calls of the ops that allow them, concat/split
// with more parts than one launch takes (8), the deterministic scatter-add bit for bit equal
// to the CPU's (both add in source order), an index past the table as an error naming the op
// (found by the kernel, reported at the next host wait), and fill of integer tensors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using F = Both<float>;

class GpuEdges : public GpuTest {};

// y = act(x) with y aliasing x, then dx = act'(dy) with dx aliasing dy; out = a * b with out
// aliasing a; the GRU cell with h_new aliasing h; axpy, scale and bias_add (in place by
// definition).
TEST_F(GpuEdges, InPlaceCalls) {
  Rand rng(3400);
  const int64_t B = 33, H = 7;
  for (ops::Act act : {ops::Act::relu, ops::Act::sigmoid, ops::Act::tanh, ops::Act::leaky_relu}) {
    F x(Shape(B, H), rng.vec(B * H)), dy(Shape(B, H), rng.vec(B * H));
    ops::act_forward(act, x.cpu, x.cpu), ops::act_forward(act, x.gpu, x.gpu);
    EXPECT_TRUE(x.matches());
    ops::act_backward(act, dy.cpu, dy.cpu, x.cpu), ops::act_backward(act, dy.gpu, dy.gpu, x.gpu);
    EXPECT_TRUE(dy.matches());
  }
  F a(Shape(B, H), rng.vec(B * H)), b(Shape(B, H), rng.vec(B * H)), bias(Shape(H), rng.vec(H));
  ops::mul(a.cpu, a.cpu, b.cpu), ops::mul(a.gpu, a.gpu, b.gpu);
  EXPECT_TRUE(a.matches_bitwise());
  ops::axpy(a.cpu, -0.5, b.cpu), ops::axpy(a.gpu, -0.5, b.gpu);
  ops::scale(a.cpu, 3.0), ops::scale(a.gpu, 3.0);
  ops::bias_add(a.cpu, bias.cpu), ops::bias_add(a.gpu, bias.gpu);
  EXPECT_TRUE(a.matches());
  F h(Shape(B, H), rng.vec(B * H)), gx(Shape(B, 3 * H), rng.vec(B * 3 * H));
  F gh(Shape(B, 3 * H), rng.vec(B * 3 * H)), gates = F::nan(Shape(B, 4 * H));
  ops::gru_cell_forward(h.cpu, gates.cpu, gx.cpu, gh.cpu, h.cpu);
  ops::gru_cell_forward(h.gpu, gates.gpu, gx.gpu, gh.gpu, h.gpu);
  EXPECT_TRUE(h.matches());
  EXPECT_TRUE(gates.matches());
}

// 11 parts of widths 1 to 11 (two launches of at most 8): concat, then split back.
TEST_F(GpuEdges, ConcatAndSplitWithMoreThanEightParts) {
  Rand rng(3401);
  const int64_t R = 257;
  std::vector<F> parts, back;
  int64_t total = 0;
  for (int64_t w = 1; w <= 11; ++w) {
    parts.emplace_back(Shape(R, w), rng.vec(R * w));
    back.push_back(F::nan(Shape(R, w)));
    total += w;
  }
  F whole = F::nan(Shape(R, total));
  const auto views = [](std::vector<F>& ps, bool gpu) {
    std::vector<Tensor> v;
    for (F& p : ps) v.push_back(gpu ? p.gpu.view() : p.cpu.view());
    return v;
  };
  for (bool gpu : {false, true}) {
    const std::vector<Tensor> p = views(parts, gpu), q = views(back, gpu);
    const Tensor w = gpu ? whole.gpu.view() : whole.cpu.view();
    ops::concat_cols(w, {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10]});
    ops::split_cols({q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9], q[10]}, w);
  }
  EXPECT_TRUE(whole.matches_bitwise());
  for (const F& q : back) EXPECT_TRUE(q.matches_bitwise());
}

// The sort-based scatter adds each row's sources onto the old value in source order, as the
// CPU's loop does: the same float additions in the same order, so the same bits.
TEST_F(GpuEdges, DeterministicScatterAddEqualsTheCpuBitForBit) {
  Rand rng(3402);
  for (int64_t W : {1, 33, 100}) {
    SCOPED_TRACE(W);
    const int64_t N = 7, n = 5000;  // hundreds of sources per row, some padding
    Guarded<int64_t> ih{Shape(n)};
    for (int64_t i = 0; i < n; ++i) ih[i] = rng.below(9) == 0 ? -1 : rng.below(N);
    Both<int64_t> idx(std::move(ih));
    F src(Shape(n, W), rng.vec(n * W, -100.0, 100.0)), dst(Shape(N, W), rng.vec(N * W));
    ops::scatter_add_rows(dst.cpu, src.cpu, idx.cpu, true);
    ops::scatter_add_rows(dst.gpu, src.gpu, idx.gpu, true);
    EXPECT_TRUE(dst.matches_bitwise());
  }
}

// Runs `op` on the GPU with one index equal to the table's rows, and expects the next host
// wait to throw an error that names `name` (then a clean wait: the fault was cleared).
template <class Op>
void expect_index_error(const char* name, Op&& op) {
  SCOPED_TRACE(name);
  try {
    op();
    depbloom::backend::synchronize(0);
    ADD_FAILURE() << "no error for an index past the table";
  } catch (const depbloom::Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(depbloom::backend::synchronize(0));
}

TEST_F(GpuEdges, IndexPastTheTableIsAnErrorNamingTheOp) {
  Rand rng(3403);
  const int64_t N = 5, W = 3, n = 4;
  Both<int32_t> idx(Shape(n), {0, 4, static_cast<double>(N), 1});
  F table(Shape(N, W), rng.vec(N * W)), rows(Shape(n, W), rng.vec(n * W));
  expect_index_error("gather_rows", [&] { ops::gather_rows(rows.gpu, table.gpu, idx.gpu); });
  expect_index_error("scatter_add_rows",
                     [&] { ops::scatter_add_rows(table.gpu, rows.gpu, idx.gpu, true); });
  expect_index_error("scatter_add_rows",
                     [&] { ops::scatter_add_rows(table.gpu, rows.gpu, idx.gpu, false); });
  expect_index_error("scatter_rows", [&] { ops::scatter_rows(table.gpu, rows.gpu, idx.gpu); });
  expect_index_error("scatter_add_rows",  // the scatter after the clear
                     [&] { ops::scatter_sum_rows(table.gpu, rows.gpu, idx.gpu); });
  F both = F::nan(Shape(n, 2 * W));
  expect_index_error("gather_cols", [&] {
    ops::gather_cols(both.gpu, {{table.gpu, idx.gpu}, {table.gpu, idx.gpu}});
  });
  expect_index_error("copy_rows", [&] {
    ops::copy_rows({{rows.gpu, table.gpu}}, Tensor{}, idx.gpu);
  });
  expect_index_error("copy_rows", [&] {
    ops::copy_rows({{table.gpu, rows.gpu}}, idx.gpu, Tensor{});
  });
  // The CPU refuses the same call at once.
  EXPECT_THROW(ops::gather_rows(rows.cpu, table.cpu, idx.cpu), depbloom::Error);
}

// fill reaches the CUDA kernels for integer and mask tensors too.
TEST_F(GpuEdges, FillIntegerTensors) {
  Both<int32_t> a(Shape(1000), std::vector<double>(1000, 0.0));
  Both<int64_t> b(Shape(33), std::vector<double>(33, 0.0));
  Both<uint8_t> c(Shape(7, 3), std::vector<double>(21, 0.0));
  ops::fill(a.cpu, -7), ops::fill(a.gpu, -7);
  ops::fill(b.cpu, 1e12), ops::fill(b.gpu, 1e12);
  ops::fill(c.cpu, 1), ops::fill(c.gpu, 1);
  EXPECT_TRUE(a.matches_bitwise());
  EXPECT_TRUE(b.matches_bitwise());
  EXPECT_TRUE(c.matches_bitwise());
}

}  // namespace
}  // namespace dbtest
