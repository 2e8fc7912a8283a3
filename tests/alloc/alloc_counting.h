// The allocation counter of the test_no_alloc program: test_no_alloc.cpp replaces the
// global allocation functions with versions that count into g_allocations while g_counting
// is set.
#pragma once

#include <atomic>
#include <cstdint>

extern std::atomic<bool> g_counting;
extern std::atomic<int64_t> g_allocations;
