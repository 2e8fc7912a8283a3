// The collective checks every communicator test runs, for any communicator and device: each
// rank contributes rank_value(rank, i), runs the collective and compares with the result a
// plain loop over all ranks' contributions predicts. Exact comparison: the values are
// halves and quarters, so sums and power-of-two means are exact.
#pragma once

#include <string>
#include <vector>

#include "dist_test_util.h"

namespace dbtest {

using depbloom::Device;
using depbloom::Shape;
using depbloom::dist::CommHandle;
using depbloom::dist::Communicator;
using depbloom::dist::ReduceOp;

template <class T>
testing::AssertionResult same_values(const std::vector<T>& got, const std::vector<T>& want,
                                     double tol, const std::string& what) {
  if (got.size() != want.size())
    return testing::AssertionFailure()
           << what << ": " << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = static_cast<double>(got[i]);
    double w = static_cast<double>(want[i]);
    if (!(std::abs(g - w) <= tol * (1.0 + std::abs(w))))
      return testing::AssertionFailure()
             << what << ": element " << i << " is " << g << ", want " << w;
  }
  return testing::AssertionSuccess();
}

template <class T>
std::vector<T> contribution(int rank, int64_t n, int64_t first = 0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<T>(rank_value(rank, first + i));
  return v;
}

template <class T>
std::vector<T> reduced(int size, int64_t n, ReduceOp op) {
  std::vector<T> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int r = 0; r < size; ++r) s += static_cast<T>(rank_value(r, i));
    if (op == ReduceOp::mean) s /= size;
    want[static_cast<size_t>(i)] = static_cast<T>(s);
  }
  return want;
}

// All ranks' contributions in rank order, rank r giving counts[r] elements.
template <class T>
std::vector<T> gathered(const std::vector<int64_t>& counts) {
  std::vector<T> want;
  for (size_t r = 0; r < counts.size(); ++r) {
    std::vector<T> part = contribution<T>(static_cast<int>(r), counts[r]);
    want.insert(want.end(), part.begin(), part.end());
  }
  return want;
}

template <class T>
testing::AssertionResult check_all_reduce(Communicator& c, Device d, int64_t n, ReduceOp op,
                                          bool nonblocking = false) {
  depbloom::OwnedTensor buf = to_device(contribution<T>(c.rank(), n), d);
  if (nonblocking) {
    CommHandle h = c.iall_reduce(buf.view(), op);
    h.wait();
    if (!h.done()) return testing::AssertionFailure() << "handle not done after wait()";
  } else {
    c.all_reduce(buf.view(), op);
  }
  return same_values(to_host<T>(buf.view()), reduced<T>(c.size(), n, op), 1e-6,
                     "all_reduce n=" + std::to_string(n));
}

template <class T>
testing::AssertionResult check_all_gather(Communicator& c, Device d, int64_t n) {
  depbloom::OwnedTensor send = to_device(contribution<T>(c.rank(), n), d);
  depbloom::OwnedTensor recv(depbloom::DTypeOf<T>::value, Shape(n * c.size()), d);
  c.all_gather(send.view(), recv.view());
  std::vector<int64_t> counts(static_cast<size_t>(c.size()), n);
  return same_values(to_host<T>(recv.view()), gathered<T>(counts), 0.0,
                     "all_gather n=" + std::to_string(n));
}

template <class T>
testing::AssertionResult check_all_gather_v(Communicator& c, Device d,
                                            const std::vector<int64_t>& counts,
                                            bool nonblocking = false) {
  int64_t total = 0;
  for (int64_t k : counts) total += k;
  depbloom::OwnedTensor send =
      to_device(contribution<T>(c.rank(), counts[static_cast<size_t>(c.rank())]), d);
  depbloom::OwnedTensor recv(depbloom::DTypeOf<T>::value, Shape(total), d);
  if (nonblocking) {
    CommHandle h = c.iall_gather_v(send.view(), recv.view(), counts);
    while (!h.test()) {
    }
  } else {
    c.all_gather_v(send.view(), recv.view(), counts);
  }
  return same_values(to_host<T>(recv.view()), gathered<T>(counts), 0.0, "all_gather_v");
}

template <class T>
testing::AssertionResult check_broadcast(Communicator& c, Device d, int64_t n, int root) {
  // Non-roots start from other values, so a broadcast that does nothing shows.
  depbloom::OwnedTensor buf = to_device(contribution<T>(c.rank(), n), d);
  c.broadcast(buf.view(), root);
  return same_values(to_host<T>(buf.view()), contribution<T>(root, n), 0.0,
                     "broadcast from " + std::to_string(root));
}

}  // namespace dbtest
