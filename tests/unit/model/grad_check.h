// Finite-difference gradient check of a layer in float64 on the CPU: the loss is a random
// projection L = sum(out * P); analytic gradients come from one backward with dout = P and
// are compared with central differences (eps 1e-6) element by element. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/tensor.h"
#include "depbloom/model/parameters.h"

namespace dbmodeltest {

using depbloom::DType;
using depbloom::Shape;
using depbloom::Tensor;

// A value whose gradient is checked. Parameter gradients accumulate (zeroed before the
// backward); activation gradients overwrite (poisoned before it, so a skipped write fails).
struct GradTarget {
  std::string name;
  Tensor value;  // f64 on the CPU, perturbed in place
  Tensor grad;   // f64, same numel
  bool accumulates = false;
};

inline GradTarget param_target(std::string name, Tensor value, Tensor grad) {
  return GradTarget{std::move(name), value, grad, true};
}
// Every parameter of the store as a gradient target.
inline void add_all_params(std::vector<GradTarget>& targets,
                           const depbloom::model::ParameterStore& store) {
  for (const auto& e : store.entries()) {
    const depbloom::model::ParamId id = store.find(e.name);
    targets.push_back(param_target(e.name, store.value(id), store.grad(id)));
  }
}

inline GradTarget input_target(std::string name, Tensor value, Tensor grad) {
  return GradTarget{std::move(name), value, grad, false};
}

// Seeded values in [-1, 1] away from zero.
inline std::vector<double> random_values(int64_t n, uint64_t seed, double lo = -1.0,
                                         double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    do x = dist(gen);
    while (std::fabs(x) < 0.05);
  }
  return v;
}

// A float64 CPU tensor of random_values, and a float64 tensor's values.
inline depbloom::OwnedTensor random_tensor(Shape shape, uint64_t seed, double lo = -1.0,
                                           double hi = 1.0) {
  depbloom::OwnedTensor t(DType::f64, shape);
  const auto v = random_values(shape.numel(), seed, lo, hi);
  std::memcpy(t.data<double>(), v.data(), v.size() * sizeof(double));
  return t;
}
inline std::vector<double> values_of(const Tensor& t) {
  return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
}

// |analytic - numeric| <= 1e-6 + 1e-5 |numeric|: central differences with eps 1e-6 on
// O(1) losses carry ~1e-10 rounding and ~1e-12 truncation error, so this bound only
// fails on a wrong gradient.
inline constexpr double kEps = 1e-6;
inline constexpr double kAtol = 1e-6;
inline constexpr double kRtol = 1e-5;

// forward(): runs the layer's forward and returns its output (f64 CPU); it may be called
// many times. backward(dout): runs the layer's backward once after a forward.
inline void expect_gradients(const std::function<Tensor()>& forward,
                             const std::function<void(const Tensor&)>& backward,
                             const std::vector<GradTarget>& targets, uint64_t seed = 7) {
  const Tensor out0 = forward();
  const std::vector<double> projection = random_values(out0.numel(), seed);
  auto loss = [&]() {
    const Tensor out = forward();
    const double* o = out.data<double>();
    double total = 0.0;
    for (int64_t i = 0; i < out.numel(); ++i) total += o[i] * projection[static_cast<size_t>(i)];
    return total;
  };
  for (const auto& t : targets) depbloom::ops::fill(t.grad, t.accumulates ? 0.0 : 1e30);
  forward();
  std::vector<double> dout(projection);
  backward(Tensor::wrap(dout.data(), out0.shape()));

  for (const auto& t : targets) {
    ASSERT_EQ(t.value.numel(), t.grad.numel()) << t.name;
    double* x = t.value.data<double>();
    const std::vector<double> analytic(t.grad.data<double>(),
                                       t.grad.data<double>() + t.grad.numel());
    for (int64_t i = 0; i < t.value.numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + kEps;
      const double up = loss();
      x[i] = saved - kEps;
      const double down = loss();
      x[i] = saved;
      const double numeric = (up - down) / (2.0 * kEps);
      const double a = analytic[static_cast<size_t>(i)];
      EXPECT_LE(std::fabs(a - numeric), kAtol + kRtol * std::fabs(numeric))
          << t.name << "[" << i << "]: analytic " << a << ", numeric " << numeric;
    }
  }
}

}  // namespace dbmodeltest
