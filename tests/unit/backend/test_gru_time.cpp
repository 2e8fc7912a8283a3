// Op tests for the fused GRU cell (PyTorch equations, gates saved as (r, z, n, gh_n)) and
// the cosine time encoding (forward, and backward that accumulates into dw and db),
// against plain double loops with guard elements.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

double sigm(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

struct CellCase {
  int64_t B, H;
  DType dtype;
  std::string label() const {
    return "B" + std::to_string(B) + "_H" + std::to_string(H) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const CellCase& c, std::ostream* os) {
  *os << c.label();
}

// Reference GRU forward: gates [B,4H] = (r, z, n, gh_n), h_new [B,H].
void gru_ref(int64_t B, int64_t H, const std::vector<double>& gx, const std::vector<double>& gh,
             const std::vector<double>& h, std::vector<double>& gates, std::vector<double>& h_new) {
  gates.assign(static_cast<size_t>(B * 4 * H), 0.0);
  h_new.assign(static_cast<size_t>(B * H), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const double* x = &gx[b * 3 * H];
      const double* g = &gh[b * 3 * H];
      double r = sigm(x[j] + g[j]);
      double z = sigm(x[H + j] + g[H + j]);
      double n = std::tanh(x[2 * H + j] + r * g[2 * H + j]);
      double* out = &gates[b * 4 * H];
      out[j] = r;
      out[H + j] = z;
      out[2 * H + j] = n;
      out[3 * H + j] = g[2 * H + j];
      h_new[b * H + j] = (1.0 - z) * n + z * h[b * H + j];
    }
}

template <class T>
void check_gru(const CellCase& p) {
  Rand rng(900 + static_cast<uint64_t>(p.B * 5 + p.H));
  const int64_t B = p.B, H = p.H;
  Guarded<T> gx(Shape(B, 3 * H), rng.vec(B * 3 * H, -2.0, 2.0));
  Guarded<T> gh(Shape(B, 3 * H), rng.vec(B * 3 * H, -2.0, 2.0));
  Guarded<T> h(Shape(B, H), rng.vec(B * H));
  std::vector<double> gref, href;
  gru_ref(B, H, gx.values(), gh.values(), h.values(), gref, href);

  Guarded<T> h_new(Shape(B, H));
  Guarded<T> gates(Shape(B, 4 * H));
  h_new.fill_nan();
  gates.fill_nan();
  ops::gru_cell_forward(h_new, gates, gx, gh, h);
  EXPECT_TRUE(all_close(h_new.values(), href, elementwise_tol<T>())) << "h_new";
  EXPECT_TRUE(all_close(gates.values(), gref, elementwise_tol<T>())) << "gates (r, z, n, gh_n)";
  EXPECT_TRUE(h_new.guard_intact());
  EXPECT_TRUE(gates.guard_intact());

  // Backward from the reference gates rounded to T.
  Guarded<T> gin(Shape(B, 4 * H), gref);
  Guarded<T> dh_new(Shape(B, H), rng.vec(B * H));
  auto g = gin.values();
  auto hv = h.values();
  auto dhn = dh_new.values();
  std::vector<double> dgx(static_cast<size_t>(B * 3 * H)), dgh(dgx.size()), dh(hv.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const double* row = &g[b * 4 * H];
      double r = row[j], z = row[H + j], n = row[2 * H + j], ghn = row[3 * H + j];
      double d = dhn[b * H + j];
      double dn = d * (1.0 - z) * (1.0 - n * n);  // through tanh
      double dz = d * (hv[b * H + j] - n) * z * (1.0 - z);
      double dr = dn * ghn * r * (1.0 - r);
      double* ox = &dgx[b * 3 * H];
      double* oh = &dgh[b * 3 * H];
      ox[j] = oh[j] = dr;
      ox[H + j] = oh[H + j] = dz;
      ox[2 * H + j] = dn;
      oh[2 * H + j] = dn * r;
      dh[b * H + j] = d * z;
    }
  Guarded<T> d_gx(Shape(B, 3 * H)), d_gh(Shape(B, 3 * H)), d_h(Shape(B, H));
  d_gx.fill_nan();
  d_gh.fill_nan();
  d_h.fill_nan();
  ops::gru_cell_backward(d_gx, d_gh, d_h, dh_new, gin, h);
  EXPECT_TRUE(all_close(d_gx.values(), dgx, elementwise_tol<T>())) << "d_gx";
  EXPECT_TRUE(all_close(d_gh.values(), dgh, elementwise_tol<T>())) << "d_gh";
  EXPECT_TRUE(all_close(d_h.values(), dh, elementwise_tol<T>())) << "dh (direct path)";
  EXPECT_TRUE(d_gx.guard_intact());
  EXPECT_TRUE(d_gh.guard_intact());
  EXPECT_TRUE(d_h.guard_intact());
}

class GruCell : public testing::TestWithParam<CellCase> {};
TEST_P(GruCell, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_gru<float>(GetParam());
  else
    check_gru<double>(GetParam());
}
const CellCase kGruCases[] = {{1, 1, DType::f32},    {7, 33, DType::f32},    {257, 7, DType::f32},
                              {33, 257, DType::f32}, {100, 100, DType::f32}, {1, 7, DType::f64},
                              {33, 100, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, GruCell, testing::ValuesIn(kGruCases), CaseName());

// ---- time encoding ----------------------------------------------------------------------

struct TimeCase {
  int64_t R, D;
  DType dtype;
  std::string label() const {
    return "R" + std::to_string(R) + "_D" + std::to_string(D) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const TimeCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_time_encode(const TimeCase& p) {
  Rand rng(1100 + static_cast<uint64_t>(p.R * 3 + p.D));
  const int64_t R = p.R, D = p.D;
  Guarded<T> dt(Shape(R), rng.vec(R, 0.0, 10.0, 0.01));
  Guarded<T> w(Shape(D), rng.vec(D));
  Guarded<T> b(Shape(D), rng.vec(D));
  auto dtv = dt.values();
  auto wv = w.values();
  auto bv = b.values();
  std::vector<double> ref(static_cast<size_t>(R * D));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t d = 0; d < D; ++d) ref[r * D + d] = std::cos(dtv[r] * wv[d] + bv[d]);
  Guarded<T> out(Shape(R, D));
  out.fill_nan();
  ops::time_encode_forward(out, dt, w, b);
  EXPECT_TRUE(all_close(out.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(out.guard_intact());

  Guarded<T> dout(Shape(R, D), rng.vec(R * D));
  Guarded<T> dw(Shape(D), rng.vec(D));  // both accumulate onto what is there
  Guarded<T> db(Shape(D), rng.vec(D));
  auto dwref = dw.values();
  auto dbref = db.values();
  auto dov = dout.values();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t d = 0; d < D; ++d) {
      double s = -std::sin(dtv[r] * wv[d] + bv[d]) * dov[r * D + d];
      dwref[d] += s * dtv[r];
      dbref[d] += s;
    }
  ops::time_encode_backward(dw, db, dout, dt, w, b);
  EXPECT_TRUE(norm_close(dw.values(), dwref, norm_tol<T>())) << "dw";
  EXPECT_TRUE(norm_close(db.values(), dbref, norm_tol<T>())) << "db";
  EXPECT_TRUE(dw.guard_intact());
  EXPECT_TRUE(db.guard_intact());
}

class TimeEncode : public testing::TestWithParam<TimeCase> {};
TEST_P(TimeEncode, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_time_encode<float>(GetParam());
  else
    check_time_encode<double>(GetParam());
}
const TimeCase kTimeCases[] = {{1, 1, DType::f32},    {7, 100, DType::f32}, {257, 33, DType::f32},
                               {33, 257, DType::f32}, {100, 7, DType::f32}, {1, 33, DType::f64},
                               {257, 100, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, TimeEncode, testing::ValuesIn(kTimeCases), CaseName());

}  // namespace
}  // namespace dbtest

namespace dbtest {
namespace {

// The float path's own cos/sin (fast_trig.h) on the arguments training produces: time
// deltas up to months in seconds times TGN's frequencies 10^-(0..9). The float argument
// itself carries an error of about one ulp (and may be fused into an FMA), so the bound
// grows with |argument|.
TEST(TimeEncode, LargeFloatArgumentsStayAccurate) {
  Rand rng(77);
  const int64_t R = 257, D = 100;
  Guarded<float> dt(Shape(R), rng.vec(R, 0.0, 3.0e6, 0.5));
  Guarded<float> w{Shape(D)};
  Guarded<float> b(Shape(D), rng.vec(D, -1.0, 1.0));
  for (int64_t d = 0; d < D; ++d) w[d] = static_cast<float>(std::pow(10.0, -9.0 * d / (D - 1)));
  Guarded<float> out{Shape(R, D)};
  ops::time_encode_forward(out, dt, w, b);
  Guarded<float> dout{Shape(R, D)};
  Guarded<float> dw{Shape(D)};
  Guarded<float> db{Shape(D)};
  for (int64_t i = 0; i < R * D; ++i) dout[i] = 1.0f;
  for (int64_t d = 0; d < D; ++d) dw[d] = db[d] = 0.0f;
  ops::time_encode_backward(dw, db, dout, dt, w, b);
  std::vector<double> db_ref(static_cast<size_t>(D), 0.0);
  double worst = 0.0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t d = 0; d < D; ++d) {
      const double arg = static_cast<double>(dt[r]) * w[d] + b[d];
      const double tol = 1e-6 + 2.5e-7 * std::abs(arg);
      const double err = std::abs(out[r * D + d] - std::cos(arg));
      worst = std::max(worst, err / tol);
      db_ref[static_cast<size_t>(d)] -= std::sin(arg);
    }
  EXPECT_LE(worst, 1.0) << "worst error relative to the bound";
  // db sums -sin over rows; columns with small arguments (w <= 1e-4) are exact enough to
  // compare tightly, the others within the accumulated argument error.
  for (int64_t d = 0; d < D; ++d) {
    const double arg_max = 3.0e6 * w[d] + 1.0;
    EXPECT_NEAR(db[d], db_ref[static_cast<size_t>(d)], R * (1e-5 + 2.5e-7 * arg_max)) << d;
  }
}

}  // namespace
}  // namespace dbtest
