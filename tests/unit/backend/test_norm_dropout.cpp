// Op tests for layer_norm (forward with saved mean/rstd, backward with accumulating
// dgamma/dbeta) and dropout (the documented Philox keep rule bit for bit, keep statistics,
// independence from the batch split, backward with the same mask), against plain loops.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "depbloom/core/philox.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct NormCase {
  int64_t R, D;
  double eps;
  DType dtype;
  std::string label() const {
    return "R" + std::to_string(R) + "_D" + std::to_string(D) + (eps > 1e-3 ? "_bigeps_" : "_") +
           dtype_label(dtype);
  }
};
void PrintTo(const NormCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_layer_norm(const NormCase& p) {
  Rand rng(1400 + static_cast<uint64_t>(p.R * 3 + p.D));
  const int64_t R = p.R, D = p.D;
  std::vector<double> xs = rng.vec(R * D, -2.0, 2.0);
  for (int64_t r = 0; r < R; ++r) {
    double offset = rng.uniform(-3.0, 3.0);  // rows with a mean far from zero
    for (int64_t d = 0; d < D; ++d) xs[r * D + d] += offset;
  }
  Guarded<T> x(Shape(R, D), xs);
  Guarded<T> gamma(Shape(D), rng.vec(D, 0.5, 1.5));
  Guarded<T> beta(Shape(D), rng.vec(D));
  auto xv = x.values();
  auto gv = gamma.values();
  auto bv = beta.values();
  std::vector<double> yref(xv.size()), mref(static_cast<size_t>(R)), rref(mref.size());
  std::vector<double> xhat(xv.size());
  for (int64_t r = 0; r < R; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t d = 0; d < D; ++d) mean += xv[r * D + d];
    mean /= static_cast<double>(D);
    for (int64_t d = 0; d < D; ++d) var += (xv[r * D + d] - mean) * (xv[r * D + d] - mean);
    var /= static_cast<double>(D);  // biased, as PyTorch
    double rstd = 1.0 / std::sqrt(var + p.eps);
    mref[r] = mean;
    rref[r] = rstd;
    for (int64_t d = 0; d < D; ++d) {
      xhat[r * D + d] = (xv[r * D + d] - mean) * rstd;
      yref[r * D + d] = xhat[r * D + d] * gv[d] + bv[d];
    }
  }
  Guarded<T> y(Shape(R, D)), mean{Shape(R)}, rstd{Shape(R)};
  y.fill_nan();
  mean.fill_nan();
  rstd.fill_nan();
  ops::layer_norm_forward(y, mean, rstd, x, gamma, beta, p.eps);
  EXPECT_TRUE(all_close(y.values(), yref, elementwise_tol<T>())) << "y";
  EXPECT_TRUE(all_close(mean.values(), mref, elementwise_tol<T>())) << "mean";
  EXPECT_TRUE(all_close(rstd.values(), rref, elementwise_tol<T>())) << "rstd = 1/sqrt(var+eps)";
  EXPECT_TRUE(y.guard_intact());
  EXPECT_TRUE(mean.guard_intact());
  EXPECT_TRUE(rstd.guard_intact());

  // Backward from the reference statistics rounded to T.
  Guarded<T> min(Shape(R), mref), rin(Shape(R), rref);
  Guarded<T> dy(Shape(R, D), rng.vec(R * D));
  Guarded<T> dgamma(Shape(D), rng.vec(D)), dbeta(Shape(D), rng.vec(D));  // accumulate
  auto dyv = dy.values();
  auto dgref = dgamma.values();
  auto dbref = dbeta.values();
  std::vector<double> dxref(xv.size());
  for (int64_t r = 0; r < R; ++r) {
    double m1 = 0.0, m2 = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      double g = dyv[r * D + d] * gv[d];
      m1 += g;
      m2 += g * xhat[r * D + d];
      dgref[d] += dyv[r * D + d] * xhat[r * D + d];
      dbref[d] += dyv[r * D + d];
    }
    m1 /= static_cast<double>(D);
    m2 /= static_cast<double>(D);
    for (int64_t d = 0; d < D; ++d)
      dxref[r * D + d] = rref[r] * (dyv[r * D + d] * gv[d] - m1 - xhat[r * D + d] * m2);
  }
  Guarded<T> dx(Shape(R, D));
  dx.fill_nan();
  ops::layer_norm_backward(dx, dgamma, dbeta, dy, x, min, rin, gamma);
  EXPECT_TRUE(norm_close(dx.values(), dxref, norm_tol<T>())) << "dx";
  EXPECT_TRUE(norm_close(dgamma.values(), dgref, norm_tol<T>())) << "dgamma";
  EXPECT_TRUE(norm_close(dbeta.values(), dbref, norm_tol<T>())) << "dbeta";
  EXPECT_TRUE(dx.guard_intact());
  EXPECT_TRUE(dgamma.guard_intact());
  EXPECT_TRUE(dbeta.guard_intact());
}

class LayerNorm : public testing::TestWithParam<NormCase> {};
TEST_P(LayerNorm, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_layer_norm<float>(GetParam());
  else
    check_layer_norm<double>(GetParam());
}
const NormCase kNormCases[] = {{1, 1, 1e-5, DType::f32},     {7, 33, 1e-5, DType::f32},
                               {257, 7, 0.1, DType::f32},    {33, 257, 1e-5, DType::f32},
                               {100, 100, 1e-5, DType::f32}, {7, 257, 1e-5, DType::f64},
                               {33, 7, 0.5, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, LayerNorm, testing::ValuesIn(kNormCases), CaseName());

// Rows of width 0 still get statistics (the CUDA op gives the same): mean 0, and rstd
// 1/sqrt(eps), the value of an empty row's zero variance.
TEST(LayerNormEmptyRows, WriteMeanZeroAndRstdOfEps) {
  Guarded<float> x(Shape(3, 0)), y(Shape(3, 0)), gamma(Shape(0)), beta(Shape(0));
  Guarded<float> mean(Shape(3)), rstd(Shape(3));
  mean.fill_nan();
  rstd.fill_nan();
  ops::layer_norm_forward(y, mean, rstd, x, gamma, beta, 1e-4);
  EXPECT_TRUE(all_close(mean.values(), {0.0, 0.0, 0.0}, elementwise_tol<float>()));
  EXPECT_TRUE(all_close(rstd.values(), {100.0, 100.0, 100.0}, elementwise_tol<float>()));
  EXPECT_TRUE(mean.guard_intact());
  EXPECT_TRUE(rstd.guard_intact());
}

// ---- dropout ----------------------------------------------------------------------------

const depbloom::RngKey kKey{0x0123456789abcdefULL,
                            static_cast<uint32_t>(depbloom::RngPurpose::dropout), 3};

// The documented rule: element e of row r keeps iff
// uniform_float(philox_u32(key, first_row + r, e % row_size)) >= p.
bool keeps(const depbloom::RngKey& key, uint64_t row, uint32_t lane, double p) {
  return depbloom::uniform_float(depbloom::philox_u32(key, row, lane)) >= p;
}

struct DropoutCase {
  Shape shape;
  double p;
  uint64_t first_row;
  DType dtype;
  std::string label() const {
    std::string s = "p" + std::to_string(static_cast<int>(p * 100));
    for (int i = 0; i < shape.rank; ++i) s += "_" + std::to_string(shape[i]);
    return s + "_first" + std::to_string(first_row % 100000) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const DropoutCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_dropout(const DropoutCase& c) {
  Rand rng(1500 + static_cast<uint64_t>(c.shape.numel()));
  const int64_t n = c.shape.numel();
  const int64_t row_size = c.shape.rank <= 1 ? 1 : n / c.shape[0];
  Guarded<T> x(c.shape, rng.vec(n));
  Guarded<T> y(c.shape);
  Guarded<uint8_t> keep(c.shape);
  y.fill_nan();
  ops::dropout_forward(y, keep, x, c.p, kKey, c.first_row);
  auto xv = x.values();
  std::vector<double> yref(static_cast<size_t>(n));
  int64_t wrong = 0;
  for (int64_t e = 0; e < n; ++e) {
    bool k = keeps(kKey, c.first_row + static_cast<uint64_t>(e / row_size),
                   static_cast<uint32_t>(e % row_size), c.p);
    if (keep[e] != (k ? 1 : 0) && wrong++ < 5) ADD_FAILURE() << "keep[" << e << "] " << +keep[e];
    yref[e] = k ? xv[e] / (1.0 - c.p) : 0.0;
  }
  EXPECT_EQ(wrong, 0) << "keep differs from the Philox rule";
  EXPECT_TRUE(all_close(y.values(), yref, elementwise_tol<T>()));
  EXPECT_TRUE(y.guard_intact());
  EXPECT_TRUE(keep.guard_intact());

  // Backward uses the given mask.
  Guarded<T> dy(c.shape, rng.vec(n)), dx(c.shape);
  dx.fill_nan();
  ops::dropout_backward(dx, dy, keep, c.p);
  auto dyv = dy.values();
  std::vector<double> dxref(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) dxref[e] = keep[e] ? dyv[e] / (1.0 - c.p) : 0.0;
  EXPECT_TRUE(all_close(dx.values(), dxref, elementwise_tol<T>()));
  EXPECT_TRUE(dx.guard_intact());
}

class Dropout : public testing::TestWithParam<DropoutCase> {};
TEST_P(Dropout, FollowsThePhiloxRule) {
  if (GetParam().dtype == DType::f32)
    check_dropout<float>(GetParam());
  else
    check_dropout<double>(GetParam());
}
const DropoutCase kDropoutCases[] = {{Shape(1, 1), 0.5, 0, DType::f32},
                                     {Shape(7, 33), 0.1, 1000, DType::f32},
                                     {Shape(257, 7), 0.25, 17, DType::f32},
                                     {Shape(33, 257), 0.75, 5, DType::f32},
                                     {Shape(257), 0.5, 3, DType::f32},
                                     {Shape(7, 3, 11), 0.25, 99, DType::f32},
                                     {Shape(100, 7), 0.5, (1ULL << 33) + 7, DType::f32},
                                     {Shape(33, 100), 0.1, 2, DType::f64},
                                     {Shape(7, 7), 0.0, 4, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, Dropout, testing::ValuesIn(kDropoutCases), CaseName());

TEST(DropoutMask, KeepFractionIsAboutOneMinusP) {
  const int64_t R = 257, W = 100;
  Guarded<float> x(Shape(R, W), Rand(1).vec(R * W)), y(Shape(R, W));
  Guarded<uint8_t> keep(Shape(R, W));
  for (double p : {0.1, 0.5, 0.75}) {
    ops::dropout_forward(y, keep, x, p, kKey, 0);
    double kept = 0.0;
    for (int64_t e = 0; e < R * W; ++e) kept += keep[e] ? 1.0 : 0.0;
    double frac = kept / static_cast<double>(R * W);
    double sigma = std::sqrt(p * (1.0 - p) / static_cast<double>(R * W));
    EXPECT_NEAR(frac, 1.0 - p, 5.0 * sigma) << "p " << p;
  }
}

// One batch in one call or split in two with the matching first_row: the same mask.
TEST(DropoutMask, SplitAcrossCallsGivesTheSameMask) {
  const int64_t R = 33, W = 7, split = 12;
  const uint64_t first = 5000;
  Guarded<float> x(Shape(R, W), Rand(2).vec(R * W)), y(Shape(R, W)), y2(Shape(R, W));
  Guarded<uint8_t> keep(Shape(R, W)), keep2(Shape(R, W));
  ops::dropout_forward(y, keep, x, 0.5, kKey, first);
  Tensor xv = x.view(), yv = y2.view(), kv = keep2.view();
  ops::dropout_forward(yv.rows(0, split), kv.rows(0, split), xv.rows(0, split), 0.5, kKey, first);
  ops::dropout_forward(yv.rows(split, R), kv.rows(split, R), xv.rows(split, R), 0.5, kKey,
                       first + split);
  for (int64_t e = 0; e < R * W; ++e) ASSERT_EQ(keep[e], keep2[e]) << e;
  EXPECT_TRUE(bitwise_equal(y.values(), y2.values()));
}

// Row ids: row r draws from counter ids[r]. Rows permuted together with their ids get the
// permuted mask (a rank's slice of a batch, laid out differently, keeps each root's mask).
TEST(DropoutMask, RowIdsKeyEachRow) {
  const int64_t R = 33, W = 7;
  std::vector<int64_t> ids(R);
  for (int64_t r = 0; r < R; ++r) ids[r] = (r * 7919 + 13) % 1000 + (int64_t{1} << 34);
  Guarded<int64_t> row_ids{Shape(R)};
  for (int64_t r = 0; r < R; ++r) row_ids[r] = ids[r];
  Rand rng(4);
  Guarded<double> x(Shape(R, W), rng.vec(R * W)), y(Shape(R, W));
  Guarded<uint8_t> keep(Shape(R, W));
  ops::dropout_forward(y, keep, x, 0.4, kKey, ops::DropoutRows(row_ids.view()));
  int64_t kept = 0;
  for (int64_t e = 0; e < R * W; ++e) {
    const bool k =
        keeps(kKey, static_cast<uint64_t>(ids[e / W]), static_cast<uint32_t>(e % W), 0.4);
    ASSERT_EQ(keep[e], k ? 1 : 0) << e;
    kept += k;
    EXPECT_EQ(y[e], k ? x[e] / 0.6 : 0.0) << e;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, R * W);
  EXPECT_TRUE(keep.guard_intact());
  // Reversed rows with reversed ids.
  Guarded<int64_t> rev_ids{Shape(R)};
  Guarded<double> rev_x(Shape(R, W)), rev_y(Shape(R, W));
  Guarded<uint8_t> rev_keep(Shape(R, W));
  for (int64_t r = 0; r < R; ++r) {
    rev_ids[r] = ids[R - 1 - r];
    for (int64_t c = 0; c < W; ++c) rev_x[r * W + c] = x[(R - 1 - r) * W + c];
  }
  ops::dropout_forward(rev_y, rev_keep, rev_x, 0.4, kKey, ops::DropoutRows(rev_ids.view()));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < W; ++c) ASSERT_EQ(rev_keep[r * W + c], keep[(R - 1 - r) * W + c]);
  // Ids of the wrong length or type are refused, naming the op.
  Guarded<int64_t> short_ids{Shape(R - 1)};
  EXPECT_THROW(ops::dropout_forward(y, keep, x, 0.4, kKey, ops::DropoutRows(short_ids.view())),
               depbloom::Error);
  Guarded<int32_t> i32_ids{Shape(R)};
  EXPECT_THROW(ops::dropout_forward(y, keep, x, 0.4, kKey, ops::DropoutRows(i32_ids.view())),
               depbloom::Error);
}

TEST(DropoutMask, DependsOnPurposeEpochAndRows) {
  const int64_t R = 33, W = 33;
  Guarded<float> x(Shape(R, W), Rand(3).vec(R * W)), y(Shape(R, W));
  auto mask_of = [&](depbloom::RngKey key, uint64_t first) {
    Guarded<uint8_t> keep(Shape(R, W));
    ops::dropout_forward(y, keep, x, 0.5, key, first);
    std::vector<double> v;
    for (int64_t e = 0; e < R * W; ++e) v.push_back(keep[e]);
    return v;
  };
  auto base = mask_of(kKey, 0);
  depbloom::RngKey other_epoch = kKey, other_purpose = kKey;
  other_epoch.epoch += 1;
  other_purpose.purpose += 1;
  EXPECT_NE(base, mask_of(other_epoch, 0));
  EXPECT_NE(base, mask_of(other_purpose, 0));
  EXPECT_NE(base, mask_of(kKey, 1));
  EXPECT_EQ(base, mask_of(kKey, 0));
}

}  // namespace
}  // namespace dbtest
