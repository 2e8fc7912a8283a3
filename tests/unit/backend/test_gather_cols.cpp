// Op tests for gather_cols (rows of several tables side by side: the message assembly):
// against plain loops with guard elements, including negative (zero-row) indices and both
// index dtypes, bit for bit against gather_rows per table and concat_cols, and its errors.
#include <gtest/gtest.h>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct GatherColsCase {
  int64_t rows, tables, table_rows;
  DType dtype;
  std::string label() const {
    return "R" + std::to_string(rows) + "_T" + std::to_string(tables) + "_N" +
           std::to_string(table_rows) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const GatherColsCase& c, std::ostream* os) {
  *os << c.label();
}

// Table t has width 3 + 5 t and i64 indices when t is odd; about one index in 8 is -1.
template <class T>
struct Tables {
  std::vector<Guarded<T>> src;
  std::vector<Guarded<int32_t>> idx32;
  std::vector<Guarded<int64_t>> idx64;
  std::vector<int64_t> widths;
  int64_t total = 0;
  Tables(const GatherColsCase& c, Rand& rng) {
    for (int64_t t = 0; t < c.tables; ++t) {
      const int64_t w = 3 + 5 * t;
      src.emplace_back(Shape(c.table_rows, w), rng.vec(c.table_rows * w));
      Guarded<int32_t> i32{Shape(c.rows)};
      Guarded<int64_t> i64{Shape(c.rows)};
      for (int64_t r = 0; r < c.rows; ++r) {
        const int64_t v = rng.below(8) == 0 ? -1 : rng.below(c.table_rows);
        i32[r] = static_cast<int32_t>(v);
        i64[r] = v;
      }
      idx32.push_back(i32);
      idx64.push_back(i64);
      widths.push_back(w);
      total += w;
    }
  }
  Tensor index(int64_t t) const { return t % 2 == 1 ? idx64[t].view() : idx32[t].view(); }
  ops::GatherPart part(int64_t t) const { return {src[t].view(), index(t)}; }
  void gather(const Tensor& out) const {
    if (src.size() == 1) ops::gather_cols(out, {part(0)});
    if (src.size() == 2) ops::gather_cols(out, {part(0), part(1)});
    if (src.size() == 3) ops::gather_cols(out, {part(0), part(1), part(2)});
    if (src.size() == 4) ops::gather_cols(out, {part(0), part(1), part(2), part(3)});
  }
};

class GatherCols : public testing::TestWithParam<GatherColsCase> {};

template <class T>
void check_reference(const GatherColsCase& c) {
  Rand rng(1500 + static_cast<uint64_t>(c.rows * c.tables));
  const Tables<T> tab(c, rng);
  Guarded<T> out(Shape(c.rows, tab.total));
  out.fill_nan();
  tab.gather(out);
  std::vector<double> ref(static_cast<size_t>(c.rows * tab.total));
  for (int64_t r = 0; r < c.rows; ++r) {
    int64_t col = 0;
    for (int64_t t = 0; t < c.tables; ++t) {
      const int64_t row = tab.idx64[t][r];
      for (int64_t j = 0; j < tab.widths[t]; ++j)
        ref[r * tab.total + col++] = row < 0 ? 0.0 : tab.src[t][row * tab.widths[t] + j];
    }
  }
  EXPECT_TRUE(bitwise_equal(out.values(), ref));
  EXPECT_TRUE(out.guard_intact());

  // The chain it replaces: a gather per table, then the concat.
  std::vector<Guarded<T>> parts;
  for (int64_t t = 0; t < c.tables; ++t) {
    parts.emplace_back(Shape(c.rows, tab.widths[t]));
    ops::gather_rows(parts.back(), tab.src[t], tab.index(t));
  }
  Guarded<T> chain(out.shape());
  if (c.tables == 1) ops::concat_cols(chain, {parts[0]});
  if (c.tables == 2) ops::concat_cols(chain, {parts[0], parts[1]});
  if (c.tables == 3) ops::concat_cols(chain, {parts[0], parts[1], parts[2]});
  if (c.tables == 4) ops::concat_cols(chain, {parts[0], parts[1], parts[2], parts[3]});
  EXPECT_TRUE(bitwise_equal(out.values(), chain.values())) << "against the chain";
}

TEST_P(GatherCols, MatchesPlainLoopsAndTheChain) {
  if (GetParam().dtype == DType::f32)
    check_reference<float>(GetParam());
  else
    check_reference<double>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Ops, GatherCols,
                         testing::Values(GatherColsCase{1, 1, 1, DType::f32},
                                         GatherColsCase{7, 2, 33, DType::f32},
                                         GatherColsCase{257, 3, 100, DType::f64},
                                         GatherColsCase{3000, 4, 257, DType::f32},
                                         GatherColsCase{0, 2, 5, DType::f32}),
                         [](const auto& info) { return info.param.label(); });

TEST(GatherColsErrors, NamesWhatIsWrong) {
  Guarded<float> out(Shape(4, 5)), a(Shape(6, 2)), b(Shape(6, 3)), wide(Shape(6, 4));
  Guarded<int64_t> idx(Shape(4)), short_idx(Shape(3)), past(Shape(4));
  for (int64_t r = 0; r < 4; ++r) idx[r] = r, past[r] = r + 3;  // past: 6 is past 6 rows
  for (int64_t r = 0; r < 3; ++r) short_idx[r] = r;
  // The widths add up to 6 columns, not 5.
  EXPECT_THROW(ops::gather_cols(out, {{a, idx}, {wide, idx}}), depbloom::Error);
  // An index list one short.
  EXPECT_THROW(ops::gather_cols(out, {{a, idx}, {b, short_idx}}), depbloom::Error);
  // An index past its table.
  EXPECT_THROW(ops::gather_cols(out, {{a, idx}, {b, past}}), depbloom::Error);
  // No table, and five.
  EXPECT_THROW(ops::gather_cols(out, {}), depbloom::Error);
  Guarded<float> one(Shape(6, 1));
  EXPECT_THROW(ops::gather_cols(out, {{one, idx}, {one, idx}, {one, idx}, {one, idx}, {one, idx}}),
               depbloom::Error);
}

}  // namespace
}  // namespace dbtest
