// Tests of TemporalAttentionLayer's table mode (neighbour features as rows of a table, as
// Tgnn's first layer reads the memory rows): in float64 it gives the slot mode's output and
// parameter gradients, its table gradient is the slots' gradient summed per row (written
// over what the tensor held), and that gradient matches central finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/model/attention_fixture.h"

namespace dbtest {
namespace {

using depbloom::model::NeighbourRows;
using depbloom::model::TemporalAttentionContext;

// A case's fixture plus a table of about half as many rows as slots; the slots read
// random rows (repeats included) or none (-1, zeros), and h_nbr is set to what they read.
struct TableFixture {
  explicit TableFixture(const TaCase& c)
      : f(c),
        U(std::max<int64_t>(2, c.R * c.K / 2)),
        table(Shape(U, c.d_in)),
        rows(Shape(c.R * c.K)) {
    for (uint64_t seed = 1; seed < 200; ++seed) {
      Rand rng(seed * 104729 + static_cast<uint64_t>(U));
      table.set(rng.vec(table.numel()));
      for (int64_t s = 0; s < rows.numel(); ++s)
        rows[s] = rng.coin(0.15) ? -1 : static_cast<int32_t>(rng.below(U));
      depbloom::ops::gather_rows(f.h_nbr.view().reshape(Shape(rows.numel(), c.d_in)), table, rows);
      double min_relu = INFINITY, min_score = INFINITY;
      f.reference(nullptr, &min_relu, &min_score);
      if (min_relu >= TaFixture::kMargin && min_score >= TaFixture::kMargin) return;
    }
    ADD_FAILURE() << "no table kept away from the kinks";
  }

  TemporalAttentionContext forward_table(Arena& arena, const Tensor& out) {
    TemporalAttentionContext ctx;
    f.layer.forward(out, ctx, f.h_root, NeighbourRows{table, rows}, f.e, f.dt, f.mask, f.dropout(),
                    arena);
    return ctx;
  }
  double loss_table() {
    Arena arena;
    Guarded<double> out(Shape(f.R, f.cfg_.d_out));
    forward_table(arena, out);
    return project(out.data(), f.proj);
  }

  TaFixture f;
  int64_t U;
  Guarded<double> table;
  Guarded<int32_t> rows;
};

class TemporalAttentionTableTest : public testing::TestWithParam<TaCase> {};

TEST_P(TemporalAttentionTableTest, MatchesSlotModeAndSumsTheTableGradient) {
  TableFixture t(GetParam());
  TaFixture& f = t.f;
  const auto& c = f.cfg_;
  const Shape out_shape(f.R, c.d_out);
  Guarded<double> out_slot(out_shape), out_table(out_shape), dout(out_shape, f.proj);
  Arena arena;
  auto ctx_slot = f.forward(arena, out_slot);
  auto ctx_table = t.forward_table(arena, out_table);
  EXPECT_TRUE(all_close(out_table.values(), out_slot.values(), Tol{1e-13, 1e-12})) << "out";

  Guarded<double> dh_root_slot(f.h_root.shape()), dh_nbr(f.h_nbr.shape()), de_slot(f.e.shape());
  f.params.fill_grads(0.0);
  f.layer.backward(dh_root_slot, dh_nbr, de_slot, dout, ctx_slot, arena);
  std::vector<std::vector<double>> slot_grads;
  for (size_t i = 0; i < f.params.size(); ++i) slot_grads.push_back(f.params.grads(i));

  // The table gradient is overwritten, like the others: it starts as NaN.
  Guarded<double> dh_root(f.h_root.shape()), d_table(t.table.shape()), de(f.e.shape());
  dh_root.fill_nan();
  de.fill_nan();
  d_table.fill_nan();
  f.params.fill_grads(0.0);
  f.layer.backward(dh_root, d_table, de, dout, ctx_table, arena);
  const Tol tol{1e-12, 1e-10};
  EXPECT_TRUE(all_close(dh_root.values(), dh_root_slot.values(), tol)) << "dh_root";
  EXPECT_TRUE(all_close(de.values(), de_slot.values(), tol)) << "de";
  for (size_t i = 0; i < f.params.size(); ++i)
    EXPECT_TRUE(all_close(f.params.grads(i), slot_grads[i], tol)) << f.params.name(i);
  // d_table = the slots' gradients summed per row, by plain loops (0 for rows none read).
  std::vector<double> want(static_cast<size_t>(t.table.numel()), 0.0);
  for (int64_t s = 0; s < t.rows.numel(); ++s)
    for (int64_t col = 0; t.rows[s] >= 0 && col < c.d_in; ++col)
      want[static_cast<size_t>(t.rows[s] * c.d_in + col)] += dh_nbr[s * c.d_in + col];
  EXPECT_TRUE(all_close(d_table.values(), want, tol)) << "d_table";
  EXPECT_TRUE(d_table.guard_intact());
  EXPECT_TRUE(dh_root.guard_intact());
}

TEST_P(TemporalAttentionTableTest, TableGradientMatchesFiniteDifferences) {
  TableFixture t(GetParam());
  TaFixture& f = t.f;
  const Shape out_shape(f.R, f.cfg_.d_out);
  Guarded<double> out(out_shape), dout(out_shape, f.proj);
  Guarded<double> dh_root(f.h_root.shape()), d_table(t.table.shape());
  d_table.fill_nan();
  Arena arena;
  auto ctx = t.forward_table(arena, out);
  f.layer.backward(dh_root, d_table, Tensor(), dout, ctx, arena);
  auto loss = [&] { return t.loss_table(); };
  EXPECT_TRUE(
      layer_grad_close(d_table.values(), numeric_grad(t.table.data(), t.table.numel(), loss)))
      << "d_table";
}

INSTANTIATE_TEST_SUITE_P(Cases, TemporalAttentionTableTest,
                         testing::Values(TaCase{"tgl_2heads", 5, 4, 3, 2, 3, 4, 2, 1.0, 0.2, 0.0},
                                         TaCase{"tgl_dropout_no_edge", 5, 4, 3, 0, 3, 4, 2, 1.0,
                                                0.2, 0.3},
                                         TaCase{"tgn_2heads", 5, 4, 3, 2, 3, 4, 2,
                                                1 / std::sqrt(3.0), 1.0, 0.0, AttentionStyle::tgn},
                                         TaCase{"tgn_one_slot_dropout", 4, 1, 2, 1, 2, 4, 1, 0.5,
                                                1.0, 0.3, AttentionStyle::tgn}),
                         CaseName());

}  // namespace
}  // namespace dbtest
