// Helpers shared by the communicator tests: rank-dependent, never-zero test values whose
// sums are exact in float, and host vectors moved to and from a device through ops::copy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/memory.h"
#include "depbloom/dist/communicator.h"

namespace dbtest {

// Element i of rank r's contribution: small halves, exact in f32 and f64 when summed.
inline double rank_value(int r, int64_t i) {
  return (r + 1) * 1.0 + 0.5 * static_cast<double>(i % 13) + 0.25 * ((i + r) % 3);
}

// The all-gather-v counts of the tests: uneven, with empty contributions (rank 1 and, with
// four ranks, the layout 1, 0, 3, 2).
inline std::vector<int64_t> uneven_counts(int size) {
  std::vector<int64_t> c(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) c[static_cast<size_t>(r)] = (3 * r + 1) % 4;
  return c;
}

// A host vector copied into a fresh device tensor (or kept on the host for Device::cpu()).
template <class T>
depbloom::OwnedTensor to_device(const std::vector<T>& host, depbloom::Device device) {
  depbloom::OwnedTensor t(depbloom::DTypeOf<T>::value,
                          depbloom::Shape(static_cast<int64_t>(host.size())), device);
  if (!host.empty()) depbloom::ops::copy(t.view(), depbloom::Tensor::wrap(host.data(), t.shape()));
  return t;
}

template <class T>
std::vector<T> to_host(const depbloom::Tensor& t) {
  std::vector<T> host(static_cast<size_t>(t.numel()));
  if (!host.empty())
    depbloom::ops::copy(depbloom::Tensor::wrap(host.data(), depbloom::Shape(t.numel())), t.flat());
  if (t.device().is_cuda()) depbloom::backend::synchronize(t.device().index);
  return host;
}

}  // namespace dbtest
