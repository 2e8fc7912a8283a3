// Unit tests of the step Arena: 256-byte alignment, reset reuse, overflow into extra chunks
// that reset() keeps (the next step carves the same memory), geometric growth, and a warm
// step that makes no system allocation.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>

#include "depbloom/core/arena.h"

namespace depbloom {
namespace {

bool aligned256(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 256 == 0;
}

TEST(Arena, AllocationsAreAlignedAndDisjoint) {
  Arena a(Device::cpu(), 4096);
  EXPECT_EQ(a.system_allocations(), 1);
  std::set<uintptr_t> seen;
  char* prev_end = nullptr;
  for (int64_t n : {1, 3, 64, 7, 1000, 1}) {
    Tensor t = a.alloc(DType::f32, Shape(n));
    EXPECT_TRUE(aligned256(t.raw())) << n;
    EXPECT_EQ(t.shape(), Shape(n));
    EXPECT_EQ(t.dtype(), DType::f32);
    EXPECT_TRUE(t.device().is_cpu());
    auto* p = static_cast<char*>(t.raw());
    EXPECT_TRUE(prev_end == nullptr || p >= prev_end) << "allocations overlap";
    prev_end = p + t.bytes();
    std::memset(p, 0x5A, t.bytes());
    seen.insert(reinterpret_cast<uintptr_t>(p));
  }
  EXPECT_EQ(seen.size(), 6u);
  void* zero = a.alloc_bytes(0);
  EXPECT_TRUE(aligned256(zero));
  EXPECT_GE(a.peak_bytes(), a.used_bytes());
  EXPECT_GE(a.capacity_bytes(), a.used_bytes());
}

TEST(Arena, ResetReusesTheSameMemory) {
  Arena a(Device::cpu(), 1 << 16);
  void* first = a.alloc_bytes(1000);
  a.alloc_bytes(5000);
  const size_t used = a.used_bytes();
  EXPECT_GE(used, 6000u);
  a.reset();
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_EQ(a.peak_bytes(), used) << "the high-water mark survives reset";
  EXPECT_EQ(a.alloc_bytes(10), first) << "a reset arena starts from the beginning again";
  EXPECT_EQ(a.system_allocations(), 1);
}

// A large tensor that skips a chunk's tail leaves it to the smaller ones after it, so the
// order of a step's allocations costs no chunk of its own.
TEST(Arena, ASkippedTailIsUsedByLaterSmallerTensors) {
  Arena a(Device::cpu(), 1 << 20);
  char* first = static_cast<char*>(a.alloc_bytes(768 << 10));
  // Past the first chunk's 256 KiB tail: a new chunk of 1 MiB, which two of them fill.
  a.alloc_bytes(512 << 10);
  a.alloc_bytes(512 << 10);
  EXPECT_EQ(a.system_allocations(), 2);
  char* small = static_cast<char*>(a.alloc_bytes(128 << 10));
  EXPECT_EQ(small, first + (768 << 10)) << "the small tensor goes into the skipped tail";
  EXPECT_EQ(a.system_allocations(), 2);
  EXPECT_TRUE(a.owns(small));
}

TEST(Arena, OverflowChunksAreKeptAndReusedInOrder) {
  Arena a(Device::cpu(), 1024);
  EXPECT_EQ(a.system_allocations(), 1);
  // Step 1 overflows the first chunk twice over.
  std::vector<void*> ptrs;
  for (int i = 0; i < 3; ++i) ptrs.push_back(a.alloc_bytes(900));
  ptrs.push_back(a.alloc_bytes(3 << 20));
  for (void* p : ptrs) EXPECT_TRUE(aligned256(p));
  const int64_t cold = a.system_allocations();
  EXPECT_GT(cold, 1);
  const size_t capacity = a.capacity_bytes();
  a.reset();
  EXPECT_EQ(a.system_allocations(), cold) << "reset keeps the chunks";
  EXPECT_EQ(a.capacity_bytes(), capacity);
  // Step 2, the same sequence: the same addresses, no system allocation at all.
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a.alloc_bytes(900), ptrs[static_cast<size_t>(i)]);
    EXPECT_EQ(a.alloc_bytes(3 << 20), ptrs[3]);
    a.reset();
  }
  EXPECT_EQ(a.system_allocations(), cold);
  // A smaller step fits in what is kept.
  a.alloc_bytes(2 << 20);
  a.alloc_bytes(1000);
  a.reset();
  EXPECT_EQ(a.system_allocations(), cold);
}

// A new high-water mark adds one chunk of at least half the capacity: growth is geometric,
// so a slowly growing step allocates rarely, and the capacity stays within a small factor
// of the high-water mark.
TEST(Arena, GrowthIsGeometric) {
  Arena a(Device::cpu(), 0);
  const size_t mib = size_t{1} << 20;
  for (size_t step = 1; step <= 64; ++step) {
    for (size_t i = 0; i < step; ++i) a.alloc_bytes(mib / 2);
    a.reset();
  }
  EXPECT_LE(a.system_allocations(), 10) << "one allocation per high-water mark";
  EXPECT_GE(a.capacity_bytes(), 32 * mib);
  EXPECT_LE(a.capacity_bytes(), 2 * 32 * mib + 2 * mib);
}

TEST(Arena, ColdArenaGrowsOnFirstUse) {
  Arena a;  // no initial block
  EXPECT_EQ(a.system_allocations(), 0);
  EXPECT_EQ(a.capacity_bytes(), 0u);
  Tensor t = a.alloc(DType::f64, Shape(10, 10));
  EXPECT_TRUE(aligned256(t.raw()));
  EXPECT_EQ(a.system_allocations(), 1);
  a.reset();
  a.alloc(DType::f64, Shape(10, 10));
  EXPECT_EQ(a.system_allocations(), 1);
}

// A cold first step may need many overflow chunks (e.g. 40 MiB of 1 MiB activations);
// the arena documents no limit, so it must cope, then be warm from the next step on.
TEST(Arena, ManySmallOverflowsInOneColdStep) {
  Arena a(Device::cpu(), 0);
  const size_t mib = size_t{1} << 20;
  for (int i = 0; i < 40; ++i) {
    void* p = nullptr;
    ASSERT_NO_THROW(p = a.alloc_bytes(mib)) << "allocation " << i;
    std::memset(p, i, mib);
  }
  a.reset();
  const int64_t warm = a.system_allocations();
  for (int i = 0; i < 40; ++i) a.alloc_bytes(mib);
  a.reset();
  EXPECT_EQ(a.system_allocations(), warm);
}

}  // namespace
}  // namespace depbloom
