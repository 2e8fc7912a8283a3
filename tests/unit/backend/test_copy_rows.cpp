// Op tests for copy_rows (several tables' rows moved by one mapping: the node state's reads
// and writes): against plain loops with guard elements for the gather, scatter and
// gather-then-scatter forms, negative indices on both sides and both index dtypes, bit for
// bit against the gather_rows and scatter_rows chain it replaces, the last of duplicate
// destinations winning, skipped parts, and its errors.
#include <gtest/gtest.h>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

enum class Form { gather, scatter, both };

struct CopyRowsCase {
  Form form;
  int64_t n, dst_rows, src_rows, tables;
  DType dtype;
  bool wide;  // i64 indices
  std::string label() const {
    const char* f = form == Form::gather ? "gather" : form == Form::scatter ? "scatter" : "both";
    return std::string(f) + "_n" + std::to_string(n) + "_D" + std::to_string(dst_rows) + "_S" +
           std::to_string(src_rows) + "_T" + std::to_string(tables) + "_" + dtype_label(dtype) +
           (wide ? "_i64" : "_i32");
  }
};
void PrintTo(const CopyRowsCase& c, std::ostream* os) {
  *os << c.label();
}

// An index of n entries: distinct destinations (a shuffled prefix of the rows, about one in
// 8 negative) or any source row (about one in 8 negative).
struct Index {
  Guarded<int32_t> i32;
  Guarded<int64_t> i64;
  bool wide;
  Index(const std::vector<int64_t>& v, bool wide_index)
      : i32(Shape(static_cast<int64_t>(v.size()))),
        i64(Shape(static_cast<int64_t>(v.size()))),
        wide(wide_index) {
    for (size_t i = 0; i < v.size(); ++i) {
      i32[static_cast<int64_t>(i)] = static_cast<int32_t>(v[i]);
      i64[static_cast<int64_t>(i)] = v[i];
    }
  }
  Tensor view() const { return wide ? i64.view() : i32.view(); }
  int64_t operator[](int64_t i) const { return i64[i]; }
};

std::vector<int64_t> distinct_rows(Rand& rng, int64_t n, int64_t rows) {
  std::vector<int64_t> all(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) all[static_cast<size_t>(r)] = r;
  for (int64_t r = rows - 1; r > 0; --r) std::swap(all[r], all[rng.below(r + 1)]);
  std::vector<int64_t> v(all.begin(), all.begin() + n);
  for (auto& x : v)
    if (rng.below(8) == 0) x = -1;
  return v;
}

std::vector<int64_t> any_rows(Rand& rng, int64_t n, int64_t rows) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.below(8) == 0 ? -1 : rng.below(rows);
  return v;
}

// Table t is [rows, 1 + 4 t]: the node state's width-1 times beside wider rows.
int64_t width(int64_t t) {
  return 1 + 4 * t;
}

template <class T>
void copy_all(const std::vector<Guarded<T>>& dst, const std::vector<Guarded<T>>& src,
              const Tensor& to, const Tensor& from) {
  auto p = [&](size_t t) { return ops::RowsPart{dst[t].view(), src[t].view()}; };
  if (dst.size() == 1) ops::copy_rows({p(0)}, to, from);
  if (dst.size() == 2) ops::copy_rows({p(0), p(1)}, to, from);
  if (dst.size() == 3) ops::copy_rows({p(0), p(1), p(2)}, to, from);
  if (dst.size() == 4) ops::copy_rows({p(0), p(1), p(2), p(3)}, to, from);
}

class CopyRows : public testing::TestWithParam<CopyRowsCase> {};

template <class T>
void check_reference(const CopyRowsCase& c) {
  Rand rng(2100 + static_cast<uint64_t>(c.n * c.tables + c.dst_rows));
  const bool has_to = c.form != Form::gather, has_from = c.form != Form::scatter;
  const int64_t dst_rows = has_to ? c.dst_rows : c.n, src_rows = has_from ? c.src_rows : c.n;
  const Index to(distinct_rows(rng, has_to ? c.n : 0, dst_rows), c.wide);
  const Index from(any_rows(rng, has_from ? c.n : 0, src_rows), !c.wide);
  std::vector<Guarded<T>> src, dst, chain;
  for (int64_t t = 0; t < c.tables; ++t) {
    src.emplace_back(Shape(src_rows, width(t)), rng.vec(src_rows * width(t)));
    const std::vector<double> before = rng.vec(dst_rows * width(t));
    dst.emplace_back(Shape(dst_rows, width(t)), before);
    chain.emplace_back(Shape(dst_rows, width(t)), before);
  }
  copy_all(dst, src, has_to ? to.view() : Tensor{}, has_from ? from.view() : Tensor{});
  for (int64_t t = 0; t < c.tables; ++t) {
    std::vector<double> ref = chain[t].values();
    const std::vector<double> s = src[t].values();
    for (int64_t i = 0; i < c.n; ++i) {
      const int64_t d = has_to ? to[i] : i, r = has_from ? from[i] : i;
      if (d < 0) continue;
      for (int64_t j = 0; j < width(t); ++j)
        ref[d * width(t) + j] = r < 0 ? 0.0 : s[r * width(t) + j];
    }
    EXPECT_TRUE(bitwise_equal(dst[t].values(), ref)) << "table " << t;
    EXPECT_TRUE(dst[t].guard_intact()) << "table " << t;
  }

  // The chain it replaces: per table a gather of the sources, then a scatter.
  for (int64_t t = 0; t < c.tables; ++t) {
    Guarded<T> picked(Shape(c.n, width(t)));
    if (has_from) {
      ops::gather_rows(picked, src[t], from.view());
    } else {
      ops::copy(picked.view(), src[t].view());
    }
    if (has_to) {
      ops::scatter_rows(chain[t], picked, to.view());
    } else {
      ops::copy(chain[t].view(), picked.view());
    }
    EXPECT_TRUE(bitwise_equal(dst[t].values(), chain[t].values()))
        << "against the chain, table " << t;
  }
}

TEST_P(CopyRows, MatchesPlainLoopsAndTheChain) {
  if (GetParam().dtype == DType::f32)
    check_reference<float>(GetParam());
  else
    check_reference<double>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(
    Ops, CopyRows,
    testing::Values(CopyRowsCase{Form::gather, 1, 1, 1, 1, DType::f32, false},
                    CopyRowsCase{Form::gather, 300, 0, 41, 4, DType::f32, true},
                    CopyRowsCase{Form::scatter, 37, 90, 0, 2, DType::f64, false},
                    CopyRowsCase{Form::scatter, 3000, 9000, 0, 2, DType::f32, true},
                    CopyRowsCase{Form::both, 5, 5, 3, 3, DType::f64, true},
                    CopyRowsCase{Form::both, 2500, 4000, 2600, 2, DType::f32, false},
                    CopyRowsCase{Form::both, 0, 7, 7, 2, DType::f32, false}),
    [](const auto& info) { return info.param.label(); });

TEST(CopyRowsDuplicates, TheLastDestinationWinsOnTheCpu) {
  // Rows 0..5 of src into rows 2, 1, 2, 2, 0, 1 of dst: the 4th and 6th writes win.
  Guarded<double> src(Shape(6, 3)), dst(Shape(3, 3));
  for (int64_t i = 0; i < 18; ++i) src[i] = static_cast<double>(i);
  dst.fill(-1.0);
  Guarded<int64_t> to(Shape(6));
  const int64_t rows[6] = {2, 1, 2, 2, 0, 1};
  for (int64_t i = 0; i < 6; ++i) to[i] = rows[i];
  ops::copy_rows({{dst, src}}, to, Tensor{});
  EXPECT_TRUE(bitwise_equal(dst.values(), {12, 13, 14, 15, 16, 17, 9, 10, 11}));
}

TEST(CopyRowsSkips, APartWithoutDestination) {
  Guarded<float> src(Shape(2, 2), {1, 2, 3, 4}), dst(Shape(2, 2));
  Guarded<int32_t> from(Shape(2));
  from[0] = 1, from[1] = 0;
  ops::copy_rows({{Tensor{}, src}, {dst, src}}, Tensor{}, from);
  EXPECT_TRUE(bitwise_equal(dst.values(), {3, 4, 1, 2}));
}

TEST(CopyRowsErrors, NamesWhatIsWrong) {
  Guarded<float> a(Shape(6, 2)), b(Shape(6, 3)), c(Shape(5, 3)), out(Shape(4, 2));
  Guarded<double> d(Shape(6, 2));
  Guarded<int64_t> idx(Shape(4)), short_idx(Shape(3)), past(Shape(4));
  for (int64_t r = 0; r < 4; ++r) idx[r] = r, past[r] = r + 3;  // past: 6 is past 6 rows
  for (int64_t r = 0; r < 3; ++r) short_idx[r] = r;
  // No index at all, and indices of different lengths.
  EXPECT_THROW(ops::copy_rows({{a, b}}, Tensor{}, Tensor{}), depbloom::Error);
  EXPECT_THROW(ops::copy_rows({{a, a}}, idx, short_idx), depbloom::Error);
  // Widths differ; the tables differ in rows; dtypes differ.
  EXPECT_THROW(ops::copy_rows({{a, b}}, idx, idx), depbloom::Error);
  EXPECT_THROW(ops::copy_rows({{b, b}, {c, c}}, idx, idx), depbloom::Error);
  EXPECT_THROW(ops::copy_rows({{a, d}}, idx, idx), depbloom::Error);
  // Without dst_idx the destination needs one row per index.
  EXPECT_THROW(ops::copy_rows({{a, a}}, Tensor{}, idx), depbloom::Error);
  // An index past its table, on either side.
  EXPECT_THROW(ops::copy_rows({{a, a}}, past, idx), depbloom::Error);
  EXPECT_THROW(ops::copy_rows({{out, a}}, Tensor{}, past), depbloom::Error);
  // No table, and five.
  EXPECT_THROW(ops::copy_rows({}, idx, idx), depbloom::Error);
  EXPECT_THROW(ops::copy_rows({{a, a}, {a, a}, {a, a}, {a, a}, {a, a}}, idx, idx), depbloom::Error);
}

}  // namespace
}  // namespace dbtest
