// Unit tests of the memory owners: Buffer (aligned host bytes, move-only, counted) and
// OwnedTensor, plus copy_bytes between host buffers and the errors of device memory in a
// build without CUDA. Device allocations themselves are exercised by the GPU suite.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "depbloom/core/device_memory.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/memory_peak.h"

namespace depbloom {
namespace {

static_assert(!std::is_copy_constructible_v<Buffer>, "Buffer is move-only");
static_assert(!std::is_copy_assignable_v<Buffer>, "Buffer is move-only");
static_assert(std::is_nothrow_move_constructible_v<Buffer>, "moves do not throw");

struct Counters {
  int64_t bytes, allocations;
};
Counters host_now() {
  return {memory_counters().host_bytes.load(), memory_counters().host_allocations.load()};
}

TEST(Buffer, PeakIsTheMostHeldAtOnce) {
  // A block larger than anything held before makes the peak exactly the bytes held with it.
  const int64_t big = host_peak_bytes() + (int64_t{1} << 20);
  {
    Buffer a(static_cast<size_t>(big), Device::cpu());
    EXPECT_EQ(host_peak_bytes(), host_now().bytes);
  }
  const int64_t peak = host_peak_bytes();
  EXPECT_GE(peak, big);
  { Buffer small(100, Device::cpu()); }
  EXPECT_EQ(host_peak_bytes(), peak) << "freeing never lowers the peak";
}

TEST(Buffer, CountsBytesAndAllocations) {
  const Counters c0 = host_now();
  {
    Buffer b(100, Device::cpu());
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.bytes(), 100u);
    EXPECT_TRUE(b.device().is_cpu());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u) << "host memory is 64-byte aligned";
    std::memset(b.data(), 0xAB, 100);  // all 100 bytes are usable
    EXPECT_EQ(host_now().bytes, c0.bytes + 100);
    EXPECT_EQ(host_now().allocations, c0.allocations + 1);
  }
  EXPECT_EQ(host_now().bytes, c0.bytes) << "destructor returns the bytes";
  EXPECT_EQ(host_now().allocations, c0.allocations + 1) << "allocations only count up";
}

TEST(Buffer, EmptyBufferAllocatesNothing) {
  const Counters c0 = host_now();
  Buffer b(0, Device::cpu());
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(host_now().bytes, c0.bytes);
  EXPECT_EQ(host_now().allocations, c0.allocations);
  Buffer d;
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_EQ(d.bytes(), 0u);
}

TEST(Buffer, MovesTransferOwnership) {
  const Counters c0 = host_now();
  Buffer a(64, Device::cpu());
  void* p = a.data();
  Buffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.bytes(), 64u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(a.bytes(), 0u);      // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(host_now().bytes, c0.bytes + 64) << "a move neither allocates nor frees";

  Buffer c(32, Device::cpu());
  EXPECT_EQ(host_now().bytes, c0.bytes + 96);
  c = std::move(b);  // c's 32 bytes are released
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(host_now().bytes, c0.bytes + 64);
  Buffer& self = c;
  c = std::move(self);  // self-move keeps the buffer
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(host_now().bytes, c0.bytes + 64);
  c = Buffer();
  EXPECT_EQ(host_now().bytes, c0.bytes);
  EXPECT_EQ(host_now().allocations, c0.allocations + 2);
}

TEST(OwnedTensor, ViewShapeZerosAndMove) {
  const Counters c0 = host_now();
  {
    OwnedTensor t = OwnedTensor::zeros(DType::f64, Shape(3, 5));
    EXPECT_EQ(t.shape(), Shape(3, 5));
    EXPECT_EQ(t.numel(), 15);
    EXPECT_EQ(t.dtype(), DType::f64);
    EXPECT_TRUE(t.device().is_cpu());
    for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<double>()[i], 0.0);
    EXPECT_EQ(host_now().bytes, c0.bytes + 120);
    const Tensor& v = t;  // owners pass where views go
    EXPECT_EQ(v.raw(), t.view().raw());
    void* p = t.view().raw();
    OwnedTensor u = std::move(t);
    EXPECT_EQ(u.view().raw(), p) << "the view follows the buffer";
    EXPECT_EQ(u.shape(), Shape(3, 5));
    EXPECT_EQ(host_now().bytes, c0.bytes + 120);
    OwnedTensor i(DType::i32, Shape(7));
    EXPECT_EQ(i.view().bytes(), 28u);
    EXPECT_THROW(i.data<float>(), Error);
  }
  EXPECT_EQ(host_now().bytes, c0.bytes);
}

TEST(CopyBytes, HostToHost) {
  OwnedTensor a(DType::i32, Shape(5)), b = OwnedTensor::zeros(DType::i32, Shape(5));
  for (int i = 0; i < 5; ++i) a.data<int32_t>()[i] = i * 7 - 3;
  copy_bytes(b.view().raw(), Device::cpu(), a.view().raw(), Device::cpu(), a.view().bytes());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b.data<int32_t>()[i], i * 7 - 3);
  copy_bytes(nullptr, Device::cpu(), nullptr, Device::cpu(), 0);  // zero bytes is a no-op
}

TEST(DeviceMemory, CpuOnlyBuildRefusesDeviceBuffers) {
  if (built_with_cuda()) GTEST_SKIP() << "built with CUDA: the GPU suite covers device memory";
  try {
    Buffer b(16, Device::cuda(0));
    FAIL() << "a device buffer in a CPU-only build";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without CUDA"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
  }
  int x = 0;
  EXPECT_THROW(copy_bytes(&x, Device::cuda(0), &x, Device::cpu(), sizeof x), Error);
}

}  // namespace
}  // namespace depbloom
