// Internal: how the CPU kernels run. Dtype visitors that turn a runtime dtype into a
// template type, an OpenMP range splitter that stays inline on small inputs, and
// reductions whose summation order is fixed by the input size alone, so every result is
// bitwise the same for any thread count. None of it allocates.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "depbloom/core/tensor.h"

#define DB_RESTRICT __restrict__

namespace depbloom::ops::cpu {

// Calls fn(T{}) with T = float or double, the element type of a float tensor.
template <class Fn>
decltype(auto) visit_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) return fn(double{});
  return fn(float{});
}

// Calls fn(T{}) for any dtype (data movement and fill).
template <class Fn>
decltype(auto) visit_any(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f64:
      return fn(double{});
    case DType::i32:
      return fn(int32_t{});
    case DType::i64:
      return fn(int64_t{});
    case DType::u8:
      return fn(uint8_t{});
    case DType::f32:
      break;
  }
  return fn(float{});
}

// Below this much work (in rough flops) a parallel region costs more than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 15;

// How a parallel loop's [0, n) is cut among the OpenMP threads. Handing ranges out as the
// threads finish keeps a thread that runs slower for a while (the smaller last GEMM tile,
// a slow vCPU moment) from keeping the others waiting at the region's end.
enum class Ranges {
  shared,          // about kChunksPerThread ranges a thread, handed out as threads finish
  one_per_thread,  // one contiguous range a thread: for bodies that scan the whole input to
                   // find what their range owns (scatters by destination row)
  one_per_item,    // every item on its own, handed out: a few items of uneven cost (tiles)
};
constexpr int64_t kChunksPerThread = 4;

// Runs body(begin, end) over [0, n) cut as `ranges` says, inline when only one thread is
// allowed or we already run inside a parallel region. Bodies must not throw, and their
// results must not depend on where the ranges end (every op's are bitwise the same for
// any thread count).
template <class Body>
void split_across_threads(int64_t n, Ranges ranges, const Body& body) {
  if (n <= 0) return;
  const int64_t threads = omp_get_max_threads();
  if (threads <= 1 || omp_in_parallel()) {
    body(int64_t{0}, n);
    return;
  }
  if (ranges == Ranges::one_per_thread) {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
      if (begin < end) body(begin, end);
    }
    return;
  }
  const int64_t chunks =
      ranges == Ranges::one_per_item ? n : std::min(n, kChunksPerThread * threads);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) body(n * c / chunks, n * (c + 1) / chunks);
}

// split_across_threads, but inline when n * cost_per_item is too small to pay for waking
// threads (a few microseconds per region). Inline rather than an `if` clause because
// libgomp allocates a one-thread team per such region, and the ops promise not to touch
// the heap.
template <class Body>
void parallel_for(int64_t n, int64_t cost_per_item, Ranges ranges, const Body& body) {
  if (n <= 0) return;
  if (n == 1 || n * cost_per_item < kMinParallelWork) {
    body(int64_t{0}, n);
    return;
  }
  split_across_threads(n, ranges, body);
}

// The common case: ranges shared out as the threads finish.
template <class Body>
void parallel_for(int64_t n, int64_t cost_per_item, const Body& body) {
  parallel_for(n, cost_per_item, Ranges::shared, body);
}

// Sum of term(i) over [0, n) in double. The range is cut into kSumBlocks blocks whose
// bounds depend on n only; each block is summed in index order and the block sums are
// added in block order, whatever the number of threads.
constexpr int kSumBlocks = 64;
template <class Term>
double fixed_order_sum(int64_t n, int64_t cost_per_item, const Term& term) {
  double block_sums[kSumBlocks];
  parallel_for(kSumBlocks, std::max<int64_t>(1, n / kSumBlocks) * cost_per_item,
               [&](int64_t b0, int64_t b1) {
                 for (int64_t b = b0; b < b1; ++b) {
                   const int64_t begin = n * b / kSumBlocks, end = n * (b + 1) / kSumBlocks;
                   double acc = 0.0;
                   for (int64_t i = begin; i < end; ++i) acc += term(i);
                   block_sums[b] = acc;
                 }
               });
  double total = 0.0;
  for (double s : block_sums) total += s;
  return total;
}

// Per-column sums over the rows of an implicit [rows, cols] matrix, kSums sums per column
// at once (dgamma and dbeta, dw and db). Columns go in tiles of kColumnTile; within a tile
// the rows are cut into kRowBlocks blocks fixed by `rows`, summed in row order, and the
// block partials are combined in block order.
//   add_row(i, j0, j1, acc): acc[s * kColumnTile + (j - j0)] += term_s(i, j), j in [j0, j1)
//   emit(j0, j1, totals):    the column sums, same layout as acc
constexpr int kColumnTile = 128;
constexpr int kRowBlocks = 16;
template <int kSums, class AddRow, class Emit>
void fixed_order_column_sums(int64_t rows, int64_t cols, int64_t cost_per_item,
                             const AddRow& add_row, const Emit& emit) {
  constexpr int kSlots = kSums * kColumnTile;
  double partial[kRowBlocks][kSlots];
  double totals[kSlots];
  for (int64_t j0 = 0; j0 < cols; j0 += kColumnTile) {
    const int64_t j1 = std::min(cols, j0 + kColumnTile);
    const int64_t block_work = std::max<int64_t>(1, rows / kRowBlocks) * (j1 - j0) * cost_per_item;
    parallel_for(kRowBlocks, block_work, Ranges::one_per_item, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double* acc = partial[b];
        std::fill(acc, acc + kSlots, 0.0);
        const int64_t begin = rows * b / kRowBlocks, end = rows * (b + 1) / kRowBlocks;
        for (int64_t i = begin; i < end; ++i) add_row(i, j0, j1, acc);
      }
    });
    std::fill(totals, totals + kSlots, 0.0);
    for (int b = 0; b < kRowBlocks; ++b)
      for (int s = 0; s < kSlots; ++s) totals[s] += partial[b][s];
    emit(j0, j1, static_cast<const double*>(totals));
  }
}

}  // namespace depbloom::ops::cpu
