// GPU-suite helpers: a device copy of a guarded host tensor (guard elements included, so a
// kernel writing past its output shows up after download) and Both<T>, one op argument held
// on the CPU and on cuda:0 so a test runs the same op on both and compares. Transfers use
// ops::copy (stream-ordered) and backend::synchronize before the host reads.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/memory.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {

inline const depbloom::Device kGpu = depbloom::Device::cuda(0);

// Every GPU test derives from this: without a usable GPU it skips with the reason.
class GpuTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!depbloom::backend::cuda_usable(&why)) GTEST_SKIP() << why;
    depbloom::backend::set_tf32(false);
  }
};

template <class T>
class OnDevice {
 public:
  explicit OnDevice(const Guarded<T>& host)
      : shape_(host.shape()),
        buf_(depbloom::DTypeOf<T>::value, Shape(host.numel() + kGuard), kGpu) {
    depbloom::ops::copy(buf_.view(), Tensor::wrap(host.data(), Shape(host.numel() + kGuard)));
  }
  Tensor view() const {
    return Tensor(buf_.view().raw(), depbloom::DTypeOf<T>::value, shape_, kGpu);
  }
  operator Tensor() const { return view(); }  // NOLINT: pass where ops take a view
  // The data and the guard elements back on the host.
  Guarded<T> download() const {
    Guarded<T> host(shape_);
    depbloom::ops::copy(Tensor::wrap(host.data(), Shape(host.numel() + kGuard)), buf_.view());
    depbloom::backend::synchronize(0);
    return host;
  }

 private:
  Shape shape_;
  depbloom::OwnedTensor buf_;
};

// One argument of an op run on both backends; both copies start with the same values.
template <class T>
struct Both {
  Guarded<T> cpu;
  OnDevice<T> gpu;
  explicit Both(Guarded<T> h) : cpu(std::move(h)), gpu(cpu) {}
  Both(Shape s, const std::vector<double>& v) : Both(Guarded<T>(s, v)) {}
  static Both nan(Shape s) {
    Guarded<T> g(s);
    g.fill_nan();
    return Both(std::move(g));
  }

  // The device result against the CPU result: element-wise or normalised.
  testing::AssertionResult matches(Tol tol = elementwise_tol<T>()) const {
    Guarded<T> got = gpu.download();
    if (auto g = got.guard_intact(); !g) return g << " (device)";
    return all_close(got.values(), cpu.values(), tol);
  }
  testing::AssertionResult matches_norm(double tol = norm_tol<T>()) const {
    Guarded<T> got = gpu.download();
    if (auto g = got.guard_intact(); !g) return g << " (device)";
    return norm_close(got.values(), cpu.values(), tol);
  }
  testing::AssertionResult matches_bitwise() const {
    Guarded<T> got = gpu.download();
    if (auto g = got.guard_intact(); !g) return g << " (device)";
    return bitwise_equal(got.values(), cpu.values());
  }
};

}  // namespace dbtest
