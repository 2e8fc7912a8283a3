// CPU row movement: gather of rows by index (negative = zero row), or added to the output,
// deterministic scatter-add (onto dst, or onto zeros: scatter_sum_rows)
// and scatter (overwrite) of rows, several tables' rows by one mapping (copy_rows), and
// column-wise concat/split. Indices are validated
// before any row moves, so a bad index throws with nothing half-written by worker threads.
#include <algorithm>
#include <array>
#include <cstring>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"

namespace depbloom::ops::cpu {
namespace {

// Calls fn(I{}) with I = int32_t or int64_t, the element type of an index tensor.
template <class Fn>
void visit_index(DType dtype, Fn&& fn) {
  if (dtype == DType::i64) {
    fn(int64_t{});
  } else {
    fn(int32_t{});
  }
}

// Throws on the first index >= rows (negative indices are padding and allowed).
template <class I>
void check_indices(const char* op, const I* idx, int64_t n, int64_t rows, const Tensor& table) {
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(idx[i]) >= rows) [[unlikely]] {
      DB_THROW(runtime, "{}: index {} at position {} is out of range for {} ({} rows)", op,
               static_cast<int64_t>(idx[i]), i, table.str(), rows);
    }
  }
}

// scatter_add_rows splits destination rows among threads when each gets this many, else
// columns, a cache line of doubles at a time.
constexpr int64_t kScatterRowsPerThread = 16;
constexpr int64_t kScatterColumnGrain = 16;

}  // namespace

void gather_rows(const Tensor& out, const Tensor& src, const Tensor& idx, bool accumulate) {
  const int64_t n = idx.numel(), rows = src.dim(0);
  const size_t row_bytes = static_cast<size_t>(src.row_size()) * dtype_size(src.dtype());
  const auto* psrc = static_cast<const char*>(src.raw());
  auto* pout = static_cast<char*>(out.raw());
  visit_index(idx.dtype(), [&](auto index_zero) {
    using I = decltype(index_zero);
    const I* pidx = idx.data<I>();
    check_indices("gather_rows", pidx, n, rows, src);
    if (accumulate) {
      const int64_t width = src.row_size();
      visit_float(out.dtype(), [&](auto zero) {
        using T = decltype(zero);
        parallel_for(n, width + 1, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const int64_t row = static_cast<int64_t>(pidx[i]);
            if (row < 0) continue;
            T* DB_RESTRICT o = out.data<T>() + i * width;
            const T* DB_RESTRICT s = src.data<T>() + row * width;
#pragma omp simd
            for (int64_t c = 0; c < width; ++c) o[c] += s[c];
          }
        });
      });
      return;
    }
    parallel_for(n, static_cast<int64_t>(row_bytes / 4 + 1), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = static_cast<int64_t>(pidx[i]);
        char* dst = pout + static_cast<size_t>(i) * row_bytes;
        if (row < 0) {
          std::memset(dst, 0, row_bytes);
        } else {
          std::memcpy(dst, psrc + static_cast<size_t>(row) * row_bytes, row_bytes);
        }
      }
    });
  });
}

void scatter_add_rows(const Tensor& dst, const Tensor& src, const Tensor& idx,
                      bool /*deterministic: always on the CPU*/) {
  const int64_t n = idx.numel(), rows = dst.dim(0), width = dst.row_size();
  if (n == 0 || width == 0) return;
  visit_index(idx.dtype(), [&](auto index_zero) {
    using I = decltype(index_zero);
    const I* pidx = idx.data<I>();
    check_indices("scatter_add_rows", pidx, n, rows, dst);
    visit_float(dst.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* pdst = dst.data<T>();
      const T* psrc = src.data<T>();
      auto add_row = [&](int64_t i, int64_t row, int64_t c0, int64_t c1) {
        T* DB_RESTRICT d = pdst + row * width;
        const T* DB_RESTRICT s = psrc + i * width;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) d[c] += s[c];
      };
      // Threads own ranges of destination rows (or, with few rows, of columns) and walk all
      // indices in order, so each element receives its additions in index order whatever
      // the thread count, with no atomics. Whole rows stream far faster than column strips.
      if (rows >= kScatterRowsPerThread * omp_get_max_threads()) {
        parallel_for(rows, n * width / rows + 1, Ranges::one_per_thread,
                     [&](int64_t r0, int64_t r1) {
                       for (int64_t i = 0; i < n; ++i) {
                         const int64_t row = static_cast<int64_t>(pidx[i]);
                         if (row >= r0 && row < r1)
                           add_row(i, row, 0, width);  // skips negative rows too
                       }
                     });
        return;
      }
      const int64_t pieces = (width + kScatterColumnGrain - 1) / kScatterColumnGrain;
      parallel_for(pieces, n * kScatterColumnGrain, Ranges::one_per_thread,
                   [&](int64_t p0, int64_t p1) {
                     const int64_t c0 = p0 * kScatterColumnGrain;
                     const int64_t c1 = std::min(width, p1 * kScatterColumnGrain);
                     for (int64_t i = 0; i < n; ++i) {
                       const int64_t row = static_cast<int64_t>(pidx[i]);
                       if (row >= 0) add_row(i, row, c0, c1);
                     }
                   });
    });
  });
}

void scatter_sum_rows(const Tensor& dst, const Tensor& src, const Tensor& idx) {
  // The indices first, so a bad one throws before dst is cleared.
  visit_index(idx.dtype(), [&](auto index_zero) {
    using I = decltype(index_zero);
    check_indices("scatter_sum_rows", idx.data<I>(), idx.numel(), dst.dim(0), dst);
  });
  const size_t row_bytes = static_cast<size_t>(dst.row_size()) * dtype_size(dst.dtype());
  auto* pdst = static_cast<char*>(dst.raw());
  parallel_for(dst.dim(0), static_cast<int64_t>(row_bytes / 16 + 1), [&](int64_t r0, int64_t r1) {
    std::memset(pdst + static_cast<size_t>(r0) * row_bytes, 0,
                static_cast<size_t>(r1 - r0) * row_bytes);
  });
  scatter_add_rows(dst, src, idx, true);
}

void scatter_rows(const Tensor& dst, const Tensor& src, const Tensor& idx) {
  const int64_t n = idx.numel(), rows = dst.dim(0);
  const size_t row_bytes = static_cast<size_t>(dst.row_size()) * dtype_size(dst.dtype());
  if (n == 0) return;
  const auto* psrc = static_cast<const char*>(src.raw());
  auto* pdst = static_cast<char*>(dst.raw());
  visit_index(idx.dtype(), [&](auto index_zero) {
    using I = decltype(index_zero);
    const I* pidx = idx.data<I>();
    check_indices("scatter_rows", pidx, n, rows, dst);  // also for empty rows, as gather_rows
    if (row_bytes == 0) return;
    // Threads own ranges of destination rows and walk all indices in order, so with
    // duplicate indices the last source row wins whatever the thread count, without
    // atomics or scratch (a scan of n indices per thread is cheap next to the copies).
    auto body = [&](int64_t r0, int64_t r1) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = static_cast<int64_t>(pidx[i]);
        if (row < r0 || row >= r1) continue;  // also skips negative indices (r0 >= 0)
        std::memcpy(pdst + static_cast<size_t>(row) * row_bytes,
                    psrc + static_cast<size_t>(i) * row_bytes, row_bytes);
      }
    };
    if (n * static_cast<int64_t>(row_bytes / 4 + 1) < kMinParallelWork) {
      body(0, rows);
    } else {
      split_across_threads(rows, Ranges::one_per_thread, body);
    }
  });
}

namespace {

// One side of copy_rows: an index (i32 or i64), or none for positions 0..n-1.
struct RowMap {
  const void* idx;
  bool wide;
  int64_t at(int64_t i) const {
    if (idx == nullptr) return i;
    return wide ? static_cast<const int64_t*>(idx)[i] : static_cast<const int32_t*>(idx)[i];
  }
};

RowMap checked_row_map(const Tensor& idx, int64_t n, int64_t rows, const Tensor& table) {
  if (!idx.defined()) return RowMap{nullptr, false};
  visit_index(idx.dtype(), [&](auto index_zero) {
    using I = decltype(index_zero);
    check_indices("copy_rows", idx.data<I>(), n, rows, table);
  });
  return RowMap{idx.raw(), idx.dtype() == DType::i64};
}

}  // namespace

void copy_rows(std::initializer_list<RowsPart> parts, const Tensor& dst_idx,
               const Tensor& src_idx) {
  struct Table {
    char* dst;
    const char* src;
    size_t bytes;
  };
  std::array<Table, 4> tables{};  // the dispatch takes at most 4
  size_t count = 0, row_bytes = 0;
  const RowsPart* lead = nullptr;
  for (const RowsPart& p : parts) {
    if (!p.dst.defined()) continue;
    if (lead == nullptr) lead = &p;
    const size_t bytes = static_cast<size_t>(p.dst.row_size()) * dtype_size(p.dst.dtype());
    tables[count++] =
        Table{static_cast<char*>(p.dst.raw()), static_cast<const char*>(p.src.raw()), bytes};
    row_bytes += bytes;
  }
  const int64_t n = (dst_idx.defined() ? dst_idx : src_idx).numel();
  const int64_t dst_rows = lead->dst.dim(0);
  const RowMap to = checked_row_map(dst_idx, n, dst_rows, lead->dst);
  const RowMap from = checked_row_map(src_idx, n, lead->src.dim(0), lead->src);
  auto move = [&](int64_t i, int64_t d) {
    const int64_t s = from.at(i);
    for (size_t t = 0; t < count; ++t) {
      const Table& tab = tables[t];
      char* out = tab.dst + static_cast<size_t>(d) * tab.bytes;
      if (s < 0) {
        std::memset(out, 0, tab.bytes);
      } else {
        std::memcpy(out, tab.src + static_cast<size_t>(s) * tab.bytes, tab.bytes);
      }
    }
  };
  const int64_t cost = static_cast<int64_t>(row_bytes / 4) + 8 * static_cast<int64_t>(count);
  if (to.idx == nullptr) {
    parallel_for(n, cost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) move(i, i);
    });
    return;
  }
  // As scatter_rows: threads own ranges of destination rows and walk all indices in order,
  // so of duplicate destinations the last wins whatever the thread count.
  parallel_for(dst_rows, n * cost / std::max<int64_t>(dst_rows, 1) + 1, Ranges::one_per_thread,
               [&](int64_t r0, int64_t r1) {
                 for (int64_t i = 0; i < n; ++i) {
                   const int64_t d = to.at(i);
                   if (d >= r0 && d < r1) move(i, d);  // skips negative destinations too
                 }
               });
}

namespace {

// Width in elements of one part of a concat/split ([R] counts as [R, 1]).
int64_t part_width(const Tensor& part) {
  return part.rank() == 1 ? 1 : part.dim(1);
}

// Copies between the whole [R, W] and its parts, row by row; to_whole picks the direction.
void move_columns(const Tensor& whole, std::initializer_list<Tensor> parts, bool to_whole) {
  const int64_t rows = whole.dim(0);
  const size_t elem = dtype_size(whole.dtype());
  const size_t whole_row = static_cast<size_t>(whole.dim(1)) * elem;
  auto* pwhole = static_cast<char*>(whole.raw());
  parallel_for(rows, whole.dim(1) + 8 * static_cast<int64_t>(parts.size()),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   char* row = pwhole + static_cast<size_t>(r) * whole_row;
                   for (const Tensor& part : parts) {
                     const size_t bytes = static_cast<size_t>(part_width(part)) * elem;
                     char* piece = static_cast<char*>(part.raw()) + static_cast<size_t>(r) * bytes;
                     if (to_whole) {
                       std::memcpy(row, piece, bytes);
                     } else {
                       std::memcpy(piece, row, bytes);
                     }
                     row += bytes;
                   }
                 }
               });
}

}  // namespace

void concat_cols(const Tensor& out, std::initializer_list<Tensor> parts) {
  move_columns(out, parts, true);
}

void gather_cols(const Tensor& out, std::initializer_list<GatherPart> parts) {
  struct Table {
    const char* src;
    const void* idx;
    bool wide;  // i64 indices
    size_t bytes;
  };
  std::array<Table, 4> tables{};  // the dispatch takes at most 4
  const int64_t n = out.dim(0);
  const size_t elem = dtype_size(out.dtype());
  size_t count = 0;
  for (const GatherPart& p : parts) {
    visit_index(p.idx.dtype(), [&](auto index_zero) {
      using I = decltype(index_zero);
      check_indices("gather_cols", p.idx.data<I>(), n, p.src.dim(0), p.src);
    });
    tables[count++] = Table{static_cast<const char*>(p.src.raw()), p.idx.raw(),
                            p.idx.dtype() == DType::i64, static_cast<size_t>(p.src.dim(1)) * elem};
  }
  const size_t out_row = static_cast<size_t>(out.dim(1)) * elem;
  auto* pout = static_cast<char*>(out.raw());
  parallel_for(n, out.dim(1) / 4 + 8 * static_cast<int64_t>(count),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   char* dst = pout + static_cast<size_t>(r) * out_row;
                   for (size_t t = 0; t < count; ++t) {
                     const Table& tab = tables[t];
                     const int64_t row = tab.wide ? static_cast<const int64_t*>(tab.idx)[r]
                                                  : static_cast<const int32_t*>(tab.idx)[r];
                     if (row < 0) {
                       std::memset(dst, 0, tab.bytes);
                     } else {
                       std::memcpy(dst, tab.src + static_cast<size_t>(row) * tab.bytes, tab.bytes);
                     }
                     dst += tab.bytes;
                   }
                 }
               });
}

void split_cols(std::initializer_list<Tensor> parts, const Tensor& in) {
  move_columns(in, parts, false);
}

}  // namespace depbloom::ops::cpu
