// Op tests for the row movers: gather_rows (negative index = zero row, out of range = error),
// scatter_add_rows (duplicates accumulate, same bits for any thread count), scatter_rows
// (overwrite, distinct indices, negative = skipped, 1-D = one column) and
// concat_cols / split_cols (1-D parts count as one column), against plain loops.
#include <gtest/gtest.h>
#include <omp.h>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct RowsCase {
  int64_t N, W, n;  // src/dst rows, width, index count
  DType dtype;
  DType index;
  std::string label() const {
    return "N" + std::to_string(N) + "_W" + std::to_string(W) + "_n" + std::to_string(n) + "_" +
           dtype_label(dtype) + (index == DType::i32 ? "_i32" : "_i64");
  }
};
void PrintTo(const RowsCase& c, std::ostream* os) {
  *os << c.label();
}

// Indices in [-1, N) with duplicates; about one in seven is -1 (padding).
std::vector<int64_t> make_index(Rand& rng, int64_t n, int64_t N) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& i : v) i = rng.below(7) == 0 ? -1 : rng.below(N);
  if (n > 1) v[1] = v[0] >= 0 ? v[0] : 0;  // at least one duplicate
  return v;
}

// Distinct indices in [0, N), with about one in seven -1 (skipped); once the N rows are used
// up the rest are -1 too.
std::vector<int64_t> make_distinct_index(Rand& rng, int64_t n, int64_t N) {
  std::vector<int64_t> perm(static_cast<size_t>(N));
  for (int64_t r = 0; r < N; ++r) perm[static_cast<size_t>(r)] = r;
  for (int64_t r = N - 1; r > 0; --r) std::swap(perm[r], perm[rng.below(r + 1)]);
  std::vector<int64_t> v(static_cast<size_t>(n));
  size_t next = 0;
  for (auto& i : v) i = rng.below(7) == 0 || next == perm.size() ? -1 : perm[next++];
  if (n > 1) v[0] = -1;  // at least one skipped index
  return v;
}

template <class I>
Guarded<I> index_tensor(const std::vector<int64_t>& v) {
  Guarded<I> t(Shape(static_cast<int64_t>(v.size())));
  for (size_t i = 0; i < v.size(); ++i) t[static_cast<int64_t>(i)] = static_cast<I>(v[i]);
  return t;
}

template <class T, class I>
void check_gather(const RowsCase& p) {
  Rand rng(300 + static_cast<uint64_t>(p.N + p.W + p.n));
  Guarded<T> src(Shape(p.N, p.W), rng.vec(p.N * p.W));
  auto iv = make_index(rng, p.n, p.N);
  auto idx = index_tensor<I>(iv);
  Guarded<T> out(Shape(p.n, p.W));
  out.fill_nan();
  std::vector<double> ref(static_cast<size_t>(p.n * p.W), 0.0);
  auto sv = src.values();
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t w = 0; w < p.W && iv[i] >= 0; ++w) ref[i * p.W + w] = sv[iv[i] * p.W + w];
  ops::gather_rows(out, src, idx);
  EXPECT_TRUE(all_close(out.values(), ref, Tol{0.0, 0.0}));
  EXPECT_TRUE(out.guard_intact());
  EXPECT_TRUE(idx.guard_intact());
  // Accumulating: each row adds its source row to what is there (a skipped index adds
  // nothing), the same bits as a plain loop.
  const std::vector<double> base = rng.vec(p.n * p.W);
  Guarded<T> sum(Shape(p.n, p.W), base);
  std::vector<T> want(base.begin(), base.end());
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t w = 0; w < p.W && iv[i] >= 0; ++w)
      want[i * p.W + w] += static_cast<T>(sv[iv[i] * p.W + w]);
  ops::gather_rows(sum, src, idx, /*accumulate=*/true);
  EXPECT_TRUE(bitwise_equal(sum.values(), std::vector<double>(want.begin(), want.end())));
  EXPECT_TRUE(sum.guard_intact());
}

template <class T, class I>
void check_scatter(const RowsCase& p) {
  Rand rng(400 + static_cast<uint64_t>(p.N + p.W + p.n));
  Guarded<T> dst(Shape(p.N, p.W), rng.vec(p.N * p.W));  // accumulates onto what is there
  Guarded<T> src(Shape(p.n, p.W), rng.vec(p.n * p.W));
  auto iv = make_index(rng, p.n, p.N);
  auto idx = index_tensor<I>(iv);
  auto ref = dst.values();
  auto sv = src.values();
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t w = 0; w < p.W && iv[i] >= 0; ++w) ref[iv[i] * p.W + w] += sv[i * p.W + w];
  ops::scatter_add_rows(dst, src, idx, true);
  EXPECT_TRUE(norm_close(dst.values(), ref, norm_tol<T>()));
  EXPECT_TRUE(dst.guard_intact());

  // scatter_sum_rows: onto zeros, whatever dst held; the same bits as a fill and the scatter.
  std::vector<double> sums(static_cast<size_t>(p.N * p.W), 0.0);
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t w = 0; w < p.W && iv[i] >= 0; ++w) sums[iv[i] * p.W + w] += sv[i * p.W + w];
  Guarded<T> summed(Shape(p.N, p.W), rng.vec(p.N * p.W)), chain(Shape(p.N, p.W));
  ops::scatter_sum_rows(summed, src, idx);
  EXPECT_TRUE(norm_close(summed.values(), sums, norm_tol<T>()));
  for (int64_t r = 0; r < p.N; ++r) {
    bool named = false;
    for (int64_t i = 0; i < p.n; ++i) named = named || iv[i] == r;
    for (int64_t w = 0; w < p.W && !named; ++w) EXPECT_EQ(summed[r * p.W + w], T(0));
  }
  ops::fill(chain, 0.0);
  ops::scatter_add_rows(chain, src, idx, true);
  EXPECT_TRUE(bitwise_equal(summed.values(), chain.values())) << "against fill and scatter";
  EXPECT_TRUE(summed.guard_intact());
}

// dst [N,W] (or [N] when W == 1 and N is odd, to cover the 1-D form) starts random; the
// rows named by idx are overwritten, the others must keep their values.
template <class T, class I>
void check_scatter_rows(const RowsCase& p) {
  Rand rng(450 + static_cast<uint64_t>(p.N + p.W + p.n));
  const bool vector = p.W == 1 && p.N % 2 == 1;
  Guarded<T> dst(vector ? Shape(p.N) : Shape(p.N, p.W), rng.vec(p.N * p.W));
  Guarded<T> src(vector ? Shape(p.n) : Shape(p.n, p.W), rng.vec(p.n * p.W));
  auto iv = make_distinct_index(rng, p.n, p.N);
  auto idx = index_tensor<I>(iv);
  auto ref = dst.values();
  auto sv = src.values();
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t w = 0; w < p.W && iv[i] >= 0; ++w) ref[iv[i] * p.W + w] = sv[i * p.W + w];
  ops::scatter_rows(dst, src, idx);
  EXPECT_TRUE(all_close(dst.values(), ref, Tol{0.0, 0.0}));
  EXPECT_TRUE(dst.guard_intact());
  EXPECT_TRUE(idx.guard_intact());
}

class GatherRows : public testing::TestWithParam<RowsCase> {};
TEST_P(GatherRows, MatchesReference) {
  const auto& p = GetParam();
  if (p.dtype == DType::f32 && p.index == DType::i32) check_gather<float, int32_t>(p);
  if (p.dtype == DType::f32 && p.index == DType::i64) check_gather<float, int64_t>(p);
  if (p.dtype == DType::f64 && p.index == DType::i32) check_gather<double, int32_t>(p);
  if (p.dtype == DType::f64 && p.index == DType::i64) check_gather<double, int64_t>(p);
}
class ScatterAddRows : public testing::TestWithParam<RowsCase> {};
TEST_P(ScatterAddRows, MatchesReference) {
  const auto& p = GetParam();
  if (p.dtype == DType::f32 && p.index == DType::i32) check_scatter<float, int32_t>(p);
  if (p.dtype == DType::f32 && p.index == DType::i64) check_scatter<float, int64_t>(p);
  if (p.dtype == DType::f64 && p.index == DType::i32) check_scatter<double, int32_t>(p);
  if (p.dtype == DType::f64 && p.index == DType::i64) check_scatter<double, int64_t>(p);
}

class ScatterRows : public testing::TestWithParam<RowsCase> {};
TEST_P(ScatterRows, MatchesReference) {
  const auto& p = GetParam();
  if (p.dtype == DType::f32 && p.index == DType::i32) check_scatter_rows<float, int32_t>(p);
  if (p.dtype == DType::f32 && p.index == DType::i64) check_scatter_rows<float, int64_t>(p);
  if (p.dtype == DType::f64 && p.index == DType::i32) check_scatter_rows<double, int32_t>(p);
  if (p.dtype == DType::f64 && p.index == DType::i64) check_scatter_rows<double, int64_t>(p);
}

const RowsCase kRowsCases[] = {
    {1, 1, 1, DType::f32, DType::i32},    {7, 33, 100, DType::f32, DType::i64},
    {257, 7, 33, DType::f32, DType::i32}, {100, 257, 7, DType::f32, DType::i64},
    {33, 1, 257, DType::f32, DType::i32}, {7, 100, 257, DType::f64, DType::i64},
    {257, 33, 1, DType::f64, DType::i32}};
INSTANTIATE_TEST_SUITE_P(Ops, GatherRows, testing::ValuesIn(kRowsCases), CaseName());
INSTANTIATE_TEST_SUITE_P(Ops, ScatterAddRows, testing::ValuesIn(kRowsCases), CaseName());
INSTANTIATE_TEST_SUITE_P(Ops, ScatterRows, testing::ValuesIn(kRowsCases), CaseName());
// Large enough that the CPU scatter splits its destination rows across threads.
const RowsCase kScatterRowsLarge[] = {{5000, 64, 4000, DType::f32, DType::i64},
                                      {4001, 33, 5000, DType::f64, DType::i32}};
INSTANTIATE_TEST_SUITE_P(Large, ScatterRows, testing::ValuesIn(kScatterRowsLarge), CaseName());

TEST(GatherRowsErrors, IndexPastTheEndThrows) {
  Guarded<float> src(Shape(7, 3), Rand(1).vec(21));
  Guarded<float> out(Shape(2, 3));
  auto idx32 = index_tensor<int32_t>({0, 7});
  EXPECT_THROW(ops::gather_rows(out, src, idx32), depbloom::Error);
  auto idx64 = index_tensor<int64_t>({int64_t{1} << 40, 2});
  EXPECT_THROW(ops::gather_rows(out, src, idx64), depbloom::Error);
}

TEST(ScatterRowsErrors, IndexPastTheEndThrows) {
  Guarded<float> dst(Shape(7, 3), Rand(2).vec(21));
  Guarded<float> src(Shape(2, 3), Rand(3).vec(6));
  const auto before = dst.values();
  auto idx32 = index_tensor<int32_t>({0, 7});
  EXPECT_THROW(ops::scatter_rows(dst, src, idx32), depbloom::Error);
  auto idx64 = index_tensor<int64_t>({int64_t{1} << 40, 2});
  EXPECT_THROW(ops::scatter_rows(dst, src, idx64), depbloom::Error);
  EXPECT_THROW(ops::scatter_sum_rows(dst, src, idx32), depbloom::Error);  // before the clear
  EXPECT_TRUE(bitwise_equal(dst.values(), before));  // checked before any row moves
}

TEST(ScatterRowsErrors, ShapeMismatchThrows) {
  Guarded<float> dst(Shape(7, 3)), wide(Shape(2, 4)), src(Shape(3, 3));
  Guarded<double> src64(Shape(2, 3));
  auto idx = index_tensor<int64_t>({0, 1});
  EXPECT_THROW(ops::scatter_rows(dst, wide, idx), depbloom::Error);   // width
  EXPECT_THROW(ops::scatter_rows(dst, src, idx), depbloom::Error);    // rows vs indices
  EXPECT_THROW(ops::scatter_rows(dst, src64, idx), depbloom::Error);  // dtype
}

// Duplicates break the caller's contract, but the CPU still keeps the last source row,
// whatever the thread count (threads own destination rows, not positions).
TEST(ScatterRowsDuplicates, CpuKeepsTheLastForOneTwoAndFourThreads) {
  Rand rng(510);
  const int64_t N = 7, W = 600, n = 300;  // enough work to go parallel
  Guarded<float> src(Shape(n, W), rng.vec(n * W));
  auto iv = make_index(rng, n, N);
  auto idx = index_tensor<int32_t>(iv);
  auto init = rng.vec(N * W);
  auto ref = init;
  auto sv = src.values();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t w = 0; w < W && iv[i] >= 0; ++w) ref[iv[i] * W + w] = sv[i * W + w];
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    Guarded<float> dst(Shape(N, W), init);
    ops::scatter_rows(dst, src, idx);
    EXPECT_TRUE(bitwise_equal(dst.values(), ref)) << threads << " threads";
  }
  omp_set_num_threads(saved);
}

// Many duplicates into few rows (the CPU splits columns among threads) and into many (it
// splits rows), so that a parallel split of the indices would show up as a different
// summation order: the same bits as a plain loop in index order, for any thread count.
TEST(ScatterAddRowsDeterminism, SameBitsForOneTwoAndFourThreads) {
  for (const int64_t N : {int64_t{7}, int64_t{300}}) {
    SCOPED_TRACE(testing::Message() << N << " rows");
    Rand rng(500 + static_cast<uint64_t>(N));
    const int64_t W = 33, n = 4000;
    Guarded<float> src(Shape(n, W), rng.vec(n * W, -100.0, 100.0));
    const auto iv = make_index(rng, n, N);
    auto idx = index_tensor<int64_t>(iv);
    auto init = rng.vec(N * W);
    std::vector<float> plain(init.begin(), init.end());
    const auto sv = src.values();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t w = 0; w < W && iv[i] >= 0; ++w)
        plain[iv[i] * W + w] += static_cast<float>(sv[i * W + w]);
    const int saved = omp_get_max_threads();
    std::vector<std::vector<double>> results;
    for (int threads : {1, 2, 4}) {
      for (bool deterministic : {true, false}) {  // the CPU is always deterministic
        omp_set_num_threads(threads);
        Guarded<float> dst(Shape(N, W), init);
        ops::scatter_add_rows(dst, src, idx, deterministic);
        results.push_back(dst.values());
      }
    }
    omp_set_num_threads(saved);
    EXPECT_TRUE(bitwise_equal(results[0], std::vector<double>(plain.begin(), plain.end())));
    for (size_t i = 1; i < results.size(); ++i)
      EXPECT_TRUE(bitwise_equal(results[0], results[i])) << "run " << i;
  }
}

// ---- concat / split ---------------------------------------------------------------------

struct ConcatCase {
  int64_t R;
  std::vector<int64_t> widths;  // 0 = a 1-D part [R]
  DType dtype;
  std::string label() const {
    std::string s = "R" + std::to_string(R);
    for (auto w : widths) s += w == 0 ? "_v" : "_" + std::to_string(w);
    return s + "_" + dtype_label(dtype);
  }
};
void PrintTo(const ConcatCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_concat_split(const ConcatCase& p) {
  Rand rng(600 + static_cast<uint64_t>(p.R));
  std::vector<Guarded<T>> parts;
  int64_t total = 0;
  for (auto w : p.widths) {
    Shape s = w == 0 ? Shape(p.R) : Shape(p.R, w);
    parts.emplace_back(s, rng.vec(s.numel()));
    total += w == 0 ? 1 : w;
  }
  ASSERT_TRUE(parts.size() >= 1 && parts.size() <= 3);
  Guarded<T> out(Shape(p.R, total));
  out.fill_nan();
  std::vector<double> ref(static_cast<size_t>(p.R * total));
  int64_t col = 0;
  for (auto& part : parts) {
    int64_t w = part.shape().rank == 1 ? 1 : part.shape()[1];
    auto v = part.values();
    for (int64_t r = 0; r < p.R; ++r)
      for (int64_t c = 0; c < w; ++c) ref[r * total + col + c] = v[r * w + c];
    col += w;
  }
  switch (parts.size()) {
    case 1:
      ops::concat_cols(out, {parts[0]});
      break;
    case 2:
      ops::concat_cols(out, {parts[0], parts[1]});
      break;
    default:
      ops::concat_cols(out, {parts[0], parts[1], parts[2]});
      break;
  }
  EXPECT_TRUE(all_close(out.values(), ref, Tol{0.0, 0.0}));
  EXPECT_TRUE(out.guard_intact());

  std::vector<Guarded<T>> back;
  for (auto& part : parts) {
    back.emplace_back(part.shape());
    back.back().fill_nan();
  }
  switch (back.size()) {
    case 1:
      ops::split_cols({back[0]}, out);
      break;
    case 2:
      ops::split_cols({back[0], back[1]}, out);
      break;
    default:
      ops::split_cols({back[0], back[1], back[2]}, out);
      break;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_TRUE(all_close(back[i].values(), parts[i].values(), Tol{0.0, 0.0})) << "part " << i;
    EXPECT_TRUE(back[i].guard_intact());
  }
}

class ConcatSplit : public testing::TestWithParam<ConcatCase> {};
TEST_P(ConcatSplit, RoundTripMatchesReference) {
  if (GetParam().dtype == DType::f32)
    check_concat_split<float>(GetParam());
  else
    check_concat_split<double>(GetParam());
}
const ConcatCase kConcatCases[] = {{1, {1}, DType::f32},        {7, {0, 7, 33}, DType::f32},
                                   {33, {33, 1}, DType::f32},   {100, {257, 0, 7}, DType::f32},
                                   {257, {7, 100}, DType::f32}, {257, {0, 0}, DType::f64},
                                   {33, {7, 33, 1}, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, ConcatSplit, testing::ValuesIn(kConcatCases), CaseName());

}  // namespace
}  // namespace dbtest
