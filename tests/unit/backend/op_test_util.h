// Shared helpers of the op tests (CPU and GPU suites): seeded non-zero random inputs, host
// tensors with guard elements after the data, tolerance checks against double-precision
// references and central finite differences. Test code only; each reference lives in its test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "depbloom/core/tensor.h"

namespace dbtest {

using depbloom::DType;
using depbloom::Shape;
using depbloom::Tensor;

// Trailing elements after every output; an op that writes past its tensor changes them.
inline constexpr int64_t kGuard = 16;

template <class T>
T sentinel() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return T{0xA5};
  else if constexpr (std::is_integral_v<T>)
    return T{-123457};
  else
    return T(-7654.25);
}

// Seeded generator; values are bounded away from zero so that no input is trivially zero.
class Rand {
 public:
  explicit Rand(uint64_t seed) : gen_(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen_);
  }
  // Uniform in [lo, hi] rejecting |x| < min_abs.
  double nonzero(double lo = -1.0, double hi = 1.0, double min_abs = 0.05) {
    for (;;) {
      double x = uniform(lo, hi);
      if (std::fabs(x) >= min_abs) return x;
    }
  }
  std::vector<double> vec(int64_t n, double lo = -1.0, double hi = 1.0, double min_abs = 0.05) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = nonzero(lo, hi, min_abs);
    return v;
  }
  int64_t below(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(gen_); }
  bool coin(double p_true) { return uniform(0.0, 1.0) < p_true; }

 private:
  std::mt19937_64 gen_;
};

// Host tensor of T with kGuard sentinel elements after its data.
template <class T>
class Guarded {
 public:
  explicit Guarded(Shape shape) : shape_(shape), buf_(static_cast<size_t>(shape.numel() + kGuard)) {
    for (auto& x : buf_) x = sentinel<T>();
  }
  Guarded(Shape shape, const std::vector<double>& values) : Guarded(shape) { set(values); }

  Tensor view() const { return Tensor::wrap(const_cast<T*>(buf_.data()), shape_); }
  operator Tensor() const { return view(); }  // NOLINT: pass where ops take a view
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  T* data() { return buf_.data(); }
  const T* data() const { return buf_.data(); }
  T& operator[](int64_t i) { return buf_[static_cast<size_t>(i)]; }
  T operator[](int64_t i) const { return buf_[static_cast<size_t>(i)]; }

  void set(const std::vector<double>& v) {
    EXPECT_EQ(static_cast<int64_t>(v.size()), numel());
    for (int64_t i = 0; i < numel() && i < static_cast<int64_t>(v.size()); ++i)
      buf_[static_cast<size_t>(i)] = static_cast<T>(v[static_cast<size_t>(i)]);
  }
  void fill(double value) {
    for (int64_t i = 0; i < numel(); ++i) buf_[static_cast<size_t>(i)] = static_cast<T>(value);
  }
  // Outputs that an op must overwrite start as NaN (arena memory is uninitialised).
  void fill_nan() {
    static_assert(std::is_floating_point_v<T>);
    fill(std::numeric_limits<double>::quiet_NaN());
  }
  // The data as double (the exact values an op sees, for the reference).
  std::vector<double> values() const {
    return std::vector<double>(buf_.begin(), buf_.begin() + numel());
  }
  testing::AssertionResult guard_intact() const {
    for (int64_t i = numel(); i < numel() + kGuard; ++i) {
      T s = sentinel<T>();
      if (std::memcmp(&buf_[static_cast<size_t>(i)], &s, sizeof(T)) != 0)
        return testing::AssertionFailure()
               << "guard element " << (i - numel()) << " after " << shape_.str() << " changed";
    }
    return testing::AssertionSuccess();
  }

 private:
  Shape shape_;
  std::vector<T> buf_;
};

// Element-wise tolerance |got - ref| <= atol + rtol * |ref|.
struct Tol {
  double atol;
  double rtol;
};
template <class T>
Tol elementwise_tol() {
  return std::is_same_v<T, float> ? Tol{1e-5, 1e-4} : Tol{1e-12, 1e-10};
}
// Normalised tolerance ||got - ref|| / ||ref|| for GEMM-like results and reductions.
template <class T>
double norm_tol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

inline testing::AssertionResult all_close(const std::vector<double>& got,
                                          const std::vector<double>& ref, Tol tol) {
  if (got.size() != ref.size())
    return testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(got[i] - ref[i]);
    if (!(err <= tol.atol + tol.rtol * std::fabs(ref[i]))) {  // NaN fails
      if (bad++ < 5)
        first += "\n  [" + std::to_string(i) + "] got " + std::to_string(got[i]) + " ref " +
                 std::to_string(ref[i]) + " err " + std::to_string(err);
    }
  }
  if (bad == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << bad << " of " << got.size() << " elements outside atol "
                                     << tol.atol << " + rtol " << tol.rtol << ":" << first;
}

inline testing::AssertionResult norm_close(const std::vector<double>& got,
                                           const std::vector<double>& ref, double tol) {
  if (got.size() != ref.size())
    return testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  double err = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  if (err < tol) return testing::AssertionSuccess();  // NaN fails
  return testing::AssertionFailure() << "normalised error " << err << " >= " << tol;
}

inline testing::AssertionResult bitwise_equal(const std::vector<double>& a,
                                              const std::vector<double>& b) {
  if (a.size() != b.size()) return testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0)
      return testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  return testing::AssertionSuccess();
}

// Central differences of loss() w.r.t. every element of x[0..n), in double; x is restored.
inline std::vector<double> numeric_grad(double* x, int64_t n, const std::function<double()>& loss,
                                        double eps = 1e-6) {
  std::vector<double> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double keep = x[i];
    x[i] = keep + eps;
    double up = loss();
    x[i] = keep - eps;
    double down = loss();
    x[i] = keep;
    g[static_cast<size_t>(i)] = (up - down) / (2.0 * eps);
  }
  return g;
}

// The gradient tolerance of every finite-difference check: |analytic - numeric| <= 1e-8 +
// 1e-6 |numeric| (float64, eps 1e-6, losses of order one).
inline testing::AssertionResult grad_close(const std::vector<double>& analytic,
                                           const std::vector<double>& numeric) {
  return all_close(analytic, numeric, Tol{1e-8, 1e-6});
}

// Projection loss sum(out * r) that turns any output into a scalar.
inline double project(const double* out, const std::vector<double>& r) {
  double s = 0.0;
  for (size_t i = 0; i < r.size(); ++i) s += out[i] * r[i];
  return s;
}

// Neighbour mask [R,K] for softmax / attention tests: row 0 fully masked (when R > 1),
// row 1 with a single valid slot, the others valid with probability 0.7.
inline Guarded<uint8_t> make_mask(Rand& rng, int64_t R, int64_t K) {
  Guarded<uint8_t> m(Shape(R, K));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < K; ++j) m[r * K + j] = rng.coin(0.7) ? 1 : 0;
  if (R > 1) {
    for (int64_t j = 0; j < K; ++j) m[j] = 0;
    for (int64_t j = 0; j < K; ++j) m[K + j] = j == K / 2 ? 1 : 0;
  }
  return m;
}

// Redraws the keys k [R,K,H*D] until every score scale * <q_h, k_jh> (q [R,H*D]) is at
// least `margin` from zero, the kink of leaky_relu.
template <class T>
void keep_scores_off_kink(Rand& rng, const T* q, T* k, int64_t R, int64_t K, int64_t H, int64_t D,
                          double scale, double margin) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < K; ++j)
      for (int64_t h = 0; h < H; ++h) {
        T* kj = k + (r * K + j) * H * D + h * D;
        const T* qh = q + r * H * D + h * D;
        for (;;) {
          double pre = 0.0;
          for (int64_t d = 0; d < D; ++d) {
            kj[d] = static_cast<T>(rng.nonzero());
            pre += static_cast<double>(qh[d]) * static_cast<double>(kj[d]);
          }
          if (std::fabs(pre * scale) >= margin) break;
        }
      }
}

// Test names from each case's label().
// The op's kv [R, K, 2W]: each slot's key row, then its value row.
template <class T>
Guarded<T> stack_kv(const Guarded<T>& k, const Guarded<T>& v, int64_t R, int64_t K, int64_t W) {
  const auto kvals = k.values(), vvals = v.values();
  std::vector<double> kv(static_cast<size_t>(R * K * 2 * W));
  for (int64_t slot = 0; slot < R * K; ++slot)
    for (int64_t c = 0; c < W; ++c) {
      kv[slot * 2 * W + c] = kvals[slot * W + c];
      kv[slot * 2 * W + W + c] = vvals[slot * W + c];
    }
  return Guarded<T>(Shape(R, K, 2 * W), kv);
}

struct CaseName {
  template <class P>
  std::string operator()(const testing::TestParamInfo<P>& info) const {
    return info.param.label();
  }
};

inline const char* dtype_label(DType t) {
  return t == DType::f32 ? "f32" : "f64";
}

}  // namespace dbtest
