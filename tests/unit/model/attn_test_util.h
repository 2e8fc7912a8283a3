// Helpers of the attention-layer tests (temporal attention, APAN updater): a layer's
// parameters in a store of their own, and the plain-loop building blocks of the reference
// forwards (affine map, time encoding, one attention head, layer norm).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <string>

#include "depbloom/backend/ops.h"
#include "depbloom/model/parameters.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {

// One layer's parameters in a ParameterStore of their own, addressed by layout position
// (sorted by name): the test declares the layer into `store`, then calls finalize().
struct LayerParams {
  explicit LayerParams(DType dtype = DType::f64) : store(dtype) {}
  void finalize() { store.finalize(); }

  size_t size() const { return store.entries().size(); }
  const std::string& name(size_t i) const { return store.entries()[i].name; }
  int64_t numel(size_t i) const { return store.entries()[i].shape.numel(); }
  double* data(size_t i) { return store.values().data<double>() + store.entries()[i].offset; }
  std::vector<double> values(size_t i) const { return read(store.values(), i); }
  std::vector<double> grads(size_t i) const { return read(store.grads(), i); }
  void fill_grads(double value) { depbloom::ops::fill(store.grads(), value); }
  // The values of `from` (same layout), rounded to this store's dtype.
  void copy_values(const LayerParams& from) {
    const Tensor& src = from.store.values();
    const Tensor& dst = store.values();
    for (int64_t j = 0; j < dst.numel(); ++j) {
      const double v = src.dtype() == DType::f64 ? src.data<double>()[j] : src.data<float>()[j];
      if (dst.dtype() == DType::f64)
        dst.data<double>()[j] = v;
      else
        dst.data<float>()[j] = static_cast<float>(v);
    }
  }

  depbloom::model::ParameterStore store;

 private:
  std::vector<double> read(const Tensor& flat, size_t i) const {
    const auto& e = store.entries()[i];
    std::vector<double> out(static_cast<size_t>(e.shape.numel()));
    for (size_t j = 0; j < out.size(); ++j) {
      const int64_t at = e.offset + static_cast<int64_t>(j);
      out[j] = flat.dtype() == DType::f64 ? flat.data<double>()[at] : flat.data<float>()[at];
    }
    return out;
  }
};

// Random weights; layer-norm gammas near 1 and time-encoding frequencies of mixed scale.
inline void randomise(LayerParams& p, Rand& rng) {
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string& n = p.name(i);
    const bool gamma = n.size() >= 8 && n.compare(n.size() - 8, 8, "ln_gamma") == 0;
    for (int64_t j = 0; j < p.numel(i); ++j)
      p.data(i)[j] = gamma ? rng.uniform(0.5, 1.5) : rng.nonzero(-0.8, 0.8);
  }
}

// y [out] = W [out, in] x + b.
inline std::vector<double> ref_affine(const double* w, const double* b,
                                      const std::vector<double>& x, int64_t out) {
  const int64_t in = static_cast<int64_t>(x.size());
  std::vector<double> y(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double s = b[o];
    for (int64_t i = 0; i < in; ++i) s += w[o * in + i] * x[static_cast<size_t>(i)];
    y[static_cast<size_t>(o)] = s;
  }
  return y;
}

inline void append_time_encoding(std::vector<double>& x, double dt, const double* w,
                                 const double* b, int64_t d) {
  for (int64_t i = 0; i < d; ++i) x.push_back(std::cos(dt * w[i] + b[i]));
}

// Attention of q [H*D] over keys/values k, v [K][H*D] with mask [K]; returns out [H*D] and
// lowers *min_score to the smallest |scale <q_h, k_jh>| seen (the leaky-relu kink).
inline std::vector<double> ref_attention(const std::vector<double>& q,
                                         const std::vector<std::vector<double>>& k,
                                         const std::vector<std::vector<double>>& v,
                                         const uint8_t* mask, int heads, double scale, double slope,
                                         double* min_score) {
  const int64_t width = static_cast<int64_t>(q.size()), D = width / heads;
  const int64_t K = static_cast<int64_t>(k.size());
  std::vector<double> out(q.size(), 0.0);
  for (int h = 0; h < heads; ++h) {
    std::vector<double> s(static_cast<size_t>(K), 0.0);
    double mx = -INFINITY;
    for (int64_t j = 0; j < K; ++j) {
      if (!mask[j]) continue;
      double u = 0.0;
      for (int64_t d = 0; d < D; ++d) u += q[h * D + d] * k[j][h * D + d];
      u *= scale;
      *min_score = std::min(*min_score, std::fabs(u));
      s[j] = u > 0.0 ? u : slope * u;
      mx = std::max(mx, s[j]);
    }
    double z = 0.0;
    for (int64_t j = 0; j < K; ++j) {
      s[j] = mask[j] ? std::exp(s[j] - mx) : 0.0;
      z += s[j];
    }
    if (z == 0.0) continue;  // no valid slot: output stays 0
    for (int64_t j = 0; j < K; ++j)
      for (int64_t d = 0; d < D; ++d) out[h * D + d] += s[j] / z * v[j][h * D + d];
  }
  return out;
}

// Layer norm of x with biased variance, as torch.nn.LayerNorm.
inline std::vector<double> ref_layer_norm(const std::vector<double>& x, const double* gamma,
                                          const double* beta, double eps) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0, var = 0.0;
  for (double v : x) mean += v / n;
  for (double v : x) var += (v - mean) * (v - mean) / n;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = (x[i] - mean) / std::sqrt(var + eps) * gamma[i] + beta[i];
  return y;
}

// |analytic - numeric| <= 1e-7 + 1e-5 |numeric|: float64, central differences with eps 1e-6
// through a dozen composed ops (layer norm divides by a small deviation), losses of order 1.
inline testing::AssertionResult layer_grad_close(const std::vector<double>& analytic,
                                                 const std::vector<double>& numeric) {
  return all_close(analytic, numeric, Tol{1e-7, 1e-5});
}

// Float32 against float64: ||got - ref|| <= 1e-4 * max(||ref||, floor). The floor matters
// for gradients that vanish in exact arithmetic (e.g. b_k when scores are plain dot
// products: a shared key shift leaves the softmax unchanged), where only rounding remains.
inline testing::AssertionResult f32_close(const std::vector<double>& got,
                                          const std::vector<double>& ref, double floor = 1e-3) {
  if (got.size() != ref.size())
    return testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  const double err = std::sqrt(num), bound = 1e-4 * std::max(std::sqrt(den), floor);
  if (err <= bound) return testing::AssertionSuccess();  // NaN fails
  return testing::AssertionFailure() << "error norm " << err << " > " << bound;
}

}  // namespace dbtest
