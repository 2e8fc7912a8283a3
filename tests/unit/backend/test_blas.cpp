// Op tests for gemm, gemm_batched, gemm_bias, bias_add and bias_grad against plain double
// loops, over shapes with 1, odd and larger sizes, all transpose combinations, alpha/beta
// and guards.
// Not the gradient checks (test_grad_*.cpp) or the error paths (test_op_errors.cpp).
#include <gtest/gtest.h>
#include <omp.h>

#include <functional>
#include <string>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

using depbloom::ops::Trans;

// op(a)[m,k] of a row-major matrix stored as [M,K] (N) or [K,M] (T).
double at(const std::vector<double>& a, Trans t, int64_t rows, int64_t cols, int64_t i, int64_t j,
          int64_t off = 0) {
  return t == Trans::N ? a[static_cast<size_t>(off + i * cols + j)]
                       : a[static_cast<size_t>(off + j * rows + i)];
}

std::vector<double> gemm_ref(const std::vector<double>& a, Trans ta, const std::vector<double>& b,
                             Trans tb, const std::vector<double>& c0, int64_t S, int64_t M,
                             int64_t N, int64_t K, double alpha, double beta) {
  std::vector<double> c(static_cast<size_t>(S * M * N));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k)
          acc += at(a, ta, M, K, m, k, s * M * K) * at(b, tb, K, N, k, n, s * K * N);
        size_t o = static_cast<size_t>((s * M + m) * N + n);
        c[o] = alpha * acc + (beta != 0.0 ? beta * c0[o] : 0.0);
      }
  return c;
}

struct GemmCase {
  int64_t S, M, N, K;  // S = 0: plain gemm on 2-D tensors
  Trans ta, tb;
  double alpha, beta;
  DType dtype;
  std::string label() const {
    auto t = [](Trans x) { return x == Trans::N ? "N" : "T"; };
    std::string s = (S > 0 ? "S" + std::to_string(S) + "_" : "") + "M" + std::to_string(M) + "_N" +
                    std::to_string(N) + "_K" + std::to_string(K) + "_" + t(ta) + t(tb);
    if (alpha != 1.0 || beta != 0.0) s += "_alphabeta";
    return s + "_" + dtype_label(dtype);
  }
};
void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_gemm(const GemmCase& p) {
  Rand rng(1000 + static_cast<uint64_t>(p.M * 7 + p.N * 13 + p.K * 31 + p.S));
  const bool batched = p.S > 0;
  const int64_t S = batched ? p.S : 1;
  auto shape = [&](int64_t r, int64_t c) { return batched ? Shape(S, r, c) : Shape(r, c); };
  Guarded<T> a(p.ta == Trans::N ? shape(p.M, p.K) : shape(p.K, p.M));
  Guarded<T> b(p.tb == Trans::N ? shape(p.K, p.N) : shape(p.N, p.K));
  Guarded<T> c(shape(p.M, p.N));
  a.set(rng.vec(a.numel()));
  b.set(rng.vec(b.numel()));
  // beta = 0 must not read c: it starts as NaN, as an uninitialised arena tensor may.
  if (p.beta == 0.0)
    c.fill_nan();
  else
    c.set(rng.vec(c.numel()));
  auto ref =
      gemm_ref(a.values(), p.ta, b.values(), p.tb, c.values(), S, p.M, p.N, p.K, p.alpha, p.beta);
  if (batched)
    depbloom::ops::gemm_batched(c, a, p.ta, b, p.tb, p.alpha, p.beta);
  else
    depbloom::ops::gemm(c, a, p.ta, b, p.tb, p.alpha, p.beta);
  EXPECT_TRUE(norm_close(c.values(), ref, norm_tol<T>()));
  EXPECT_TRUE(c.guard_intact());
  EXPECT_TRUE(a.guard_intact());
  EXPECT_TRUE(b.guard_intact());
}

class Gemm : public testing::TestWithParam<GemmCase> {};
TEST_P(Gemm, MatchesReference) {
  if (GetParam().dtype == DType::f32)
    check_gemm<float>(GetParam());
  else
    check_gemm<double>(GetParam());
}

std::vector<GemmCase> gemm_cases() {
  // The last three run the CPU's k-split path: a C under two 128-wide tiles with k >= 1024,
  // then a C of two row tiles whose k is at least 4 times its longer side.
  const int64_t mnk[][3] = {{1, 1, 1},       {7, 33, 1},     {33, 7, 257},
                            {100, 1, 33},    {1, 257, 7},    {257, 100, 33},
                            {33, 100, 1100}, {100, 7, 2049}, {300, 40, 1300}};
  std::vector<GemmCase> v;
  int i = 0;
  for (const auto& s : mnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        v.push_back({0, s[0], s[1], s[2], ta, tb, 1.0, 0.0, DType::f32});
        if (i % 2 == 0) v.push_back({0, s[0], s[1], s[2], ta, tb, 0.75, -1.25, DType::f32});
        if (i % 3 == 0) v.push_back({0, s[0], s[1], s[2], ta, tb, -0.5, 0.5, DType::f64});
        ++i;
      }
  return v;
}
INSTANTIATE_TEST_SUITE_P(Ops, Gemm, testing::ValuesIn(gemm_cases()), CaseName());

// gemm_bias: c = op(a) op(b) + bias on every row, over the serial, tiled (257 x 100 x 33)
// and k-split (the last two) paths and an empty k (c = the bias); c starts as NaN, which
// it must never read.
template <class T>
void check_gemm_bias(int64_t M, int64_t N, int64_t K, Trans ta, Trans tb) {
  Rand rng(2000 + static_cast<uint64_t>(M * 7 + N * 13 + K * 31));
  Guarded<T> a(ta == Trans::N ? Shape(M, K) : Shape(K, M), rng.vec(M * K));
  Guarded<T> b(tb == Trans::N ? Shape(K, N) : Shape(N, K), rng.vec(K * N));
  Guarded<T> bias(Shape(N), rng.vec(N));
  Guarded<T> c(Shape(M, N));
  c.fill_nan();
  auto ref = gemm_ref(a.values(), ta, b.values(), tb, {}, 1, M, N, K, 1.0, 0.0);
  const auto bv = bias.values();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) ref[static_cast<size_t>(m * N + n)] += bv[n];
  depbloom::ops::gemm_bias(c, a, ta, b, tb, bias);
  EXPECT_TRUE(norm_close(c.values(), ref, norm_tol<T>()));
  EXPECT_TRUE(c.guard_intact());
  EXPECT_TRUE(bias.guard_intact());
}

TEST(GemmBias, MatchesReference) {
  const int64_t mnk[][3] = {{1, 1, 1},      {7, 33, 0},      {33, 7, 257},
                            {257, 100, 33}, {33, 100, 1100}, {100, 7, 2049}};
  for (const auto& s : mnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        SCOPED_TRACE(testing::Message()
                     << "M " << s[0] << " N " << s[1] << " K " << s[2] << " "
                     << (ta == Trans::N ? "N" : "T") << (tb == Trans::N ? "N" : "T"));
        check_gemm_bias<float>(s[0], s[1], s[2], ta, tb);
        check_gemm_bias<double>(s[0], s[1], s[2], ta, tb);
      }
}

// Tiled and k-split products, with and without a bias, give the same bits whatever the
// thread count.
TEST(GemmOps, IndependentOfThreadCount) {
  Rand rng(17);
  const int64_t shapes[][3] = {{257, 300, 40}, {200, 150, 3000}, {300, 100, 1300}};
  for (const auto& s : shapes) {
    Guarded<float> a(Shape(s[2], s[0]), rng.vec(s[2] * s[0]));
    Guarded<float> b(Shape(s[2], s[1]), rng.vec(s[2] * s[1]));
    Guarded<float> c(Shape(s[0], s[1]));
    Guarded<float> bias(Shape(s[1]), rng.vec(s[1]));
    const int saved = omp_get_max_threads();
    std::vector<std::vector<double>> got;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      c.set(std::vector<double>(static_cast<size_t>(c.numel()), 0.5));
      depbloom::ops::gemm(c, a, Trans::T, b, Trans::N, 0.75, 2.0);
      got.push_back(c.values());
      depbloom::ops::gemm_bias(c, a, Trans::T, b, Trans::N, bias);
      got.push_back(c.values());
    }
    omp_set_num_threads(saved);
    for (size_t i = 2; i < got.size(); ++i)  // gemm, then gemm_bias, per thread count
      EXPECT_TRUE(bitwise_equal(got[i % 2], got[i])) << s[0] << "x" << s[1] << "x" << s[2];
  }
}

// affine_grad: dw [N,K] += dy^T x and db [N] += column sums of dy [M,N], x [M,K], over the
// serial, tiled (N 257) and k-split (M >= 1024 with a small dw, or M at least 4 times dw's
// longer side) paths; both outputs start non-zero, since they accumulate.
template <class T>
void check_affine_grad(int64_t M, int64_t N, int64_t K) {
  Rand rng(3000 + static_cast<uint64_t>(M * 7 + N * 13 + K * 31));
  Guarded<T> dy(Shape(M, N), rng.vec(M * N)), x(Shape(M, K), rng.vec(M * K));
  Guarded<T> dw(Shape(N, K), rng.vec(N * K)), db(Shape(N), rng.vec(N));
  auto want_w =
      gemm_ref(dy.values(), Trans::T, x.values(), Trans::N, dw.values(), 1, N, K, M, 1.0, 1.0);
  auto want_b = db.values();
  const auto dyv = dy.values();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) want_b[n] += dyv[static_cast<size_t>(m * N + n)];
  depbloom::ops::affine_grad(dw, db, dy, x);
  EXPECT_TRUE(norm_close(dw.values(), want_w, norm_tol<T>())) << "dw";
  EXPECT_TRUE(all_close(db.values(), want_b, Tol{1e-5, 1e-5})) << "db";
  EXPECT_TRUE(dw.guard_intact());
  EXPECT_TRUE(db.guard_intact());
  EXPECT_TRUE(dy.guard_intact());
}

TEST(AffineGrad, MatchesReference) {
  const int64_t mnk[][3] = {{1, 1, 1},      {7, 33, 1},      {33, 257, 100}, {1100, 100, 33},
                            {2049, 7, 100}, {1300, 300, 40}, {0, 5, 3}};
  for (const auto& s : mnk) {
    SCOPED_TRACE(testing::Message() << "M " << s[0] << " N " << s[1] << " K " << s[2]);
    check_affine_grad<float>(s[0], s[1], s[2]);
    check_affine_grad<double>(s[0], s[1], s[2]);
  }
}

// The k-split path's product and column sums give the same bits whatever the thread count.
TEST(AffineGrad, IndependentOfThreadCount) {
  Rand rng(19);
  Guarded<float> dy(Shape(3000, 150), rng.vec(3000 * 150)), x(Shape(3000, 200), rng.vec(600000));
  Guarded<float> dw(Shape(150, 200)), db(Shape(150));
  const int saved = omp_get_max_threads();
  std::vector<std::vector<double>> got;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    dw.fill(0.5);
    db.fill(0.5);
    depbloom::ops::affine_grad(dw, db, dy, x);
    got.push_back(dw.values());
    got.push_back(db.values());
  }
  omp_set_num_threads(saved);
  for (size_t i = 2; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i % 2], got[i])) << "output " << i;
}

// Column windows (Tensor::cols) as GEMM operands: each of a, b and c is a block of columns
// of a wider matrix. The result equals the packed product, and c's other columns keep
// their values.
std::vector<double> window_values(const Guarded<double>& wide, const Tensor& window) {
  std::vector<double> v;
  const auto all = wide.values();
  const int64_t first = (static_cast<const double*>(window.raw()) - wide.view().data<double>());
  for (int64_t r = 0; r < window.dim(0); ++r)
    for (int64_t col = 0; col < window.dim(1); ++col)
      v.push_back(all[static_cast<size_t>(first + r * window.row_stride() + col)]);
  return v;
}

TEST(GemmWindows, OperandsMayBeColumnBlocks) {
  const int64_t mnk[][3] = {{7, 33, 5}, {257, 100, 33}, {33, 100, 1100}};
  for (const auto& s : mnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        const int64_t M = s[0], N = s[1], K = s[2];
        SCOPED_TRACE(testing::Message()
                     << "M " << M << " N " << N << " K " << K << " " << (ta == Trans::N ? "N" : "T")
                     << (tb == Trans::N ? "N" : "T"));
        Rand rng(4000 + static_cast<uint64_t>(M + N + K));
        const Shape sa = ta == Trans::N ? Shape(M, K) : Shape(K, M);
        const Shape sb = tb == Trans::N ? Shape(K, N) : Shape(N, K);
        Guarded<double> wa(Shape(sa[0], sa[1] + 3), rng.vec(sa[0] * (sa[1] + 3)));
        Guarded<double> wb(Shape(sb[0], sb[1] + 2), rng.vec(sb[0] * (sb[1] + 2)));
        Guarded<double> wc(Shape(M, N + 4), rng.vec(M * (N + 4)));
        const Tensor a = wa.view().cols(2, 2 + sa[1]), b = wb.view().cols(0, sb[1]);
        const Tensor c = wc.view().cols(1, 1 + N);
        auto want = gemm_ref(window_values(wa, a), ta, window_values(wb, b), tb,
                             window_values(wc, c), 1, M, N, K, 0.5, 2.0);
        const auto before = wc.values();
        depbloom::ops::gemm(c, a, ta, b, tb, 0.5, 2.0);
        EXPECT_TRUE(norm_close(window_values(wc, c), want, norm_tol<double>()));
        const auto after = wc.values();
        for (int64_t r = 0; r < M; ++r)
          for (int64_t col : {int64_t{0}, N + 1, N + 2, N + 3})
            EXPECT_EQ(after[static_cast<size_t>(r * (N + 4) + col)],
                      before[static_cast<size_t>(r * (N + 4) + col)]);
        EXPECT_TRUE(wc.guard_intact());
      }
}

// gemm_bias reads a and b as windows; affine_grad reads x and accumulates into dw as windows.
TEST(GemmWindows, GemmBiasAndAffineGrad) {
  Rand rng(4100);
  const int64_t M = 1100, N = 40, K = 30;
  Guarded<double> wx(Shape(M, K + 10), rng.vec(M * (K + 10))), dy(Shape(M, N), rng.vec(M * N));
  Guarded<double> ww(Shape(N, K + 10), rng.vec(N * (K + 10))), bias(Shape(N), rng.vec(N));
  const Tensor x = wx.view().cols(10, 10 + K), w = ww.view().cols(5, 5 + K);
  Guarded<double> y(Shape(M, N));
  auto want = gemm_ref(window_values(wx, x), Trans::N, window_values(ww, w), Trans::T, {}, 1, M, N,
                       K, 1.0, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) want[static_cast<size_t>(m * N + n)] += bias[n];
  depbloom::ops::gemm_bias(y, x, Trans::N, w, Trans::T, bias);
  EXPECT_TRUE(norm_close(y.values(), want, norm_tol<double>()));
  Guarded<double> db{Shape(N)};
  db.fill(0.0);
  auto want_w = gemm_ref(dy.values(), Trans::T, window_values(wx, x), Trans::N,
                         window_values(ww, w), 1, N, K, M, 1.0, 1.0);
  depbloom::ops::affine_grad(w, db, dy, x);
  EXPECT_TRUE(norm_close(window_values(ww, w), want_w, norm_tol<double>()));
}

// Every other op takes packed tensors only, and says so; so do gemm_bias's c and
// affine_grad's dy.
TEST(GemmWindows, OtherOpsRejectAWindow) {
  Guarded<float> wide(Shape(4, 6)), bias(Shape(3)), packed(Shape(4, 3)), db(Shape(3));
  const Tensor window = wide.view().cols(1, 4);
  auto expect_named = [&](const std::function<void()>& call, const char* op) {
    try {
      call();
      ADD_FAILURE() << op << ": no exception";
    } catch (const depbloom::Error& e) {
      EXPECT_NE(std::string(e.what()).find("column window"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  expect_named([&] { depbloom::ops::fill(window, 1.0); }, "fill");
  expect_named(
      [&] {
        depbloom::ops::concat_cols(packed, {window.cols(0, 1), window.cols(1, 3)});
      },
      "concat_cols");
  expect_named(
      [&] {
        depbloom::ops::gemm_bias(window, packed, Trans::N, Guarded<float>(Shape(3, 3)), Trans::N,
                                 bias);
      },
      "gemm_bias");
  expect_named([&] { depbloom::ops::affine_grad(Guarded<float>(Shape(3, 3)), db, window, packed); },
               "affine_grad");
}

class GemmBatched : public testing::TestWithParam<GemmCase> {};
TEST_P(GemmBatched, MatchesReference) {
  if (GetParam().dtype == DType::f32)
    check_gemm<float>(GetParam());
  else
    check_gemm<double>(GetParam());
}

std::vector<GemmCase> gemm_batched_cases() {
  const int64_t smnk[][4] = {{1, 7, 33, 1}, {7, 1, 7, 33}, {3, 33, 100, 7}, {2, 257, 1, 7}};
  std::vector<GemmCase> v;
  for (const auto& s : smnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        v.push_back({s[0], s[1], s[2], s[3], ta, tb, 1.0, 0.0, DType::f32});
        v.push_back({s[0], s[1], s[2], s[3], ta, tb, 1.5, 0.25, DType::f32});
      }
  v.push_back({3, 7, 33, 100, Trans::T, Trans::N, 0.5, 2.0, DType::f64});
  v.push_back({2, 33, 7, 1, Trans::N, Trans::T, 1.0, 0.0, DType::f64});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Ops, GemmBatched, testing::ValuesIn(gemm_batched_cases()), CaseName());

// ---- bias -------------------------------------------------------------------------------

struct MatCase {
  int64_t M, N;
  DType dtype;
  std::string label() const {
    return "M" + std::to_string(M) + "_N" + std::to_string(N) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const MatCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_bias_add(const MatCase& p) {
  Rand rng(77 + static_cast<uint64_t>(p.M * 3 + p.N));
  Guarded<T> y(Shape(p.M, p.N), rng.vec(p.M * p.N));
  Guarded<T> bias(Shape(p.N), rng.vec(p.N));
  auto ref = y.values();
  auto bv = bias.values();
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) ref[static_cast<size_t>(m * p.N + n)] += bv[n];
  depbloom::ops::bias_add(y, bias);
  EXPECT_TRUE(all_close(y.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(y.guard_intact());
}

template <class T>
void check_bias_grad(const MatCase& p) {
  Rand rng(91 + static_cast<uint64_t>(p.M * 3 + p.N));
  Guarded<T> dy(Shape(p.M, p.N), rng.vec(p.M * p.N));
  Guarded<T> dbias(Shape(p.N), rng.vec(p.N));  // accumulates onto what is there
  auto ref = dbias.values();
  auto d = dy.values();
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) ref[n] += d[static_cast<size_t>(m * p.N + n)];
  depbloom::ops::bias_grad(dbias, dy);
  EXPECT_TRUE(norm_close(dbias.values(), ref, norm_tol<T>()));
  EXPECT_TRUE(dbias.guard_intact());
}

class BiasAdd : public testing::TestWithParam<MatCase> {};
TEST_P(BiasAdd, MatchesReference) {
  if (GetParam().dtype == DType::f32)
    check_bias_add<float>(GetParam());
  else
    check_bias_add<double>(GetParam());
}
class BiasGrad : public testing::TestWithParam<MatCase> {};
TEST_P(BiasGrad, AccumulatesColumnSums) {
  if (GetParam().dtype == DType::f32)
    check_bias_grad<float>(GetParam());
  else
    check_bias_grad<double>(GetParam());
}

const MatCase kMatCases[] = {{1, 1, DType::f32},    {7, 33, DType::f32},    {257, 7, DType::f32},
                             {33, 257, DType::f32}, {100, 100, DType::f32}, {1, 257, DType::f32},
                             {257, 1, DType::f32},  {33, 7, DType::f64},    {100, 257, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, BiasAdd, testing::ValuesIn(kMatCases), CaseName());
INSTANTIATE_TEST_SUITE_P(Ops, BiasGrad, testing::ValuesIn(kMatCases), CaseName());

}  // namespace
}  // namespace dbtest
