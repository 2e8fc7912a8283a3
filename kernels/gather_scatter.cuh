// Launchers of the row gather/scatter and column concat/split kernels (gather_scatter.cu,
// and sort.cu for the deterministic scatter): plain C++ declarations over raw device
// pointers. Index arrays are int32 or int64; a negative index means "no row" (padding); an
// index past the table is an error the kernels report through an IndexFault.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace depbloom::kernels {

// The ops whose kernels check their indices, as IndexFault::op numbers them.
enum IndexOp : int {
  kNoFault = 0,
  kGatherRows = 1,
  kScatterAddRows = 2,
  kScatterRows = 3,
  kGatherCols = 4,
  kCopyRows = 5
};

// Device memory where kernels record the first index >= the table's rows they meet: the op,
// the index and the rows. The host reads it at its next wait (the kernels cannot throw), so
// a planner bug is an error on the GPU as on the CPU, not silently corrupted rows.
struct IndexFault {
  int op;
  int unused;
  long long index;
  long long rows;
};

// out [n, width] row i = src [src_rows, width] row idx[i] (accumulate: out row i += it); a
// negative index gives a zero row (adds nothing); an index >= src_rows too (to guard
// memory), and it is recorded in `fault`.
cudaError_t gather_rows(float* out, const float* src, const int32_t* idx, int64_t n, int64_t width,
                        int64_t src_rows, bool accumulate, IndexFault* fault, cudaStream_t stream);
cudaError_t gather_rows(float* out, const float* src, const int64_t* idx, int64_t n, int64_t width,
                        int64_t src_rows, bool accumulate, IndexFault* fault, cudaStream_t stream);

// dst [dst_rows, width] row idx[i] += src [n, width] row i with atomicAdd (order-dependent
// rounding). Negative indices are skipped; indices >= dst_rows too, recorded in `fault`.
cudaError_t scatter_add_rows_atomic(float* dst, const float* src, const int32_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, IndexFault* fault,
                                    cudaStream_t stream);
cudaError_t scatter_add_rows_atomic(float* dst, const float* src, const int64_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, IndexFault* fault,
                                    cudaStream_t stream);

// The same sum, deterministic (sort.cu): a stable radix sort of (row, position) pairs,
// then one thread per (destination row, column) adds its sources in position order onto
// the old value, exactly as a sequential loop over i would. Needs n < 2^31 and
// dst_rows < 2^32 - 1, and a workspace of at least the bytes the size query gives (which also
// says how much of it CUB's sort takes, so a call sizes the sort once). Out-of-range indices
// are skipped and recorded in `fault`, as above.
struct SortedScatterBytes {
  size_t total = 0;  // 0: CUB could not size the sort
  size_t cub = 0;
};
SortedScatterBytes scatter_add_rows_sorted_workspace_bytes(int64_t n, int64_t dst_rows);
cudaError_t scatter_add_rows_sorted(float* dst, const float* src, const int32_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, void* workspace,
                                    SortedScatterBytes bytes, IndexFault* fault,
                                    cudaStream_t stream);
cudaError_t scatter_add_rows_sorted(float* dst, const float* src, const int64_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, void* workspace,
                                    SortedScatterBytes bytes, IndexFault* fault,
                                    cudaStream_t stream);

// dst [dst_rows, width] row idx[i] = src [n, width] row i (overwrite). Negative indices are
// skipped, indices >= dst_rows too (recorded in `fault`); with duplicate indices an
// unspecified source wins.
cudaError_t scatter_rows(float* dst, const float* src, const int32_t* idx, int64_t n, int64_t width,
                         int64_t dst_rows, IndexFault* fault, cudaStream_t stream);
cudaError_t scatter_rows(float* dst, const float* src, const int64_t* idx, int64_t n, int64_t width,
                         int64_t dst_rows, IndexFault* fault, cudaStream_t stream);

// One block of columns of a concat/split: `data` is a [rows, width] part placed at column
// `offset` of the [rows, total_width] whole.
struct ColumnPart {
  float* data;
  int64_t width;
  int64_t offset;
};
constexpr int kMaxColumnParts = 8;  // parts per launch; callers loop for more

// whole[:, offset:offset+width] = part, for `count` <= kMaxColumnParts parts.
cudaError_t concat_cols(float* whole, int64_t rows, int64_t total_width, const ColumnPart* parts,
                        int count, cudaStream_t stream);
// whole [rows, total_width] = [parts... || cos(dt w + b)] with the encoding's dims = total_width
// minus the parts' widths; dt null stands for zero deltas.
cudaError_t concat_cols_time_encode(float* whole, int64_t rows, int64_t total_width,
                                    const ColumnPart* parts, int count, const float* dt,
                                    const float* w, const float* b, cudaStream_t stream);
// One table of gather_cols: rows of src [src_rows, width] picked by idx (int32, or int64 when
// wide), written at column `offset` of the output.
struct GatherColumns {
  const float* src;
  const void* idx;
  bool wide;
  int64_t width;
  int64_t offset;
  int64_t src_rows;
};
constexpr int kMaxGatherParts = 4;  // tables per launch (the op takes no more)

// out [rows, total_width]: each table's rows side by side (a negative index gives zeros; an
// index >= src_rows too, recorded in `fault`).
cudaError_t gather_cols(float* out, int64_t rows, int64_t total_width, const GatherColumns* parts,
                        int count, IndexFault* fault, cudaStream_t stream);
// One table of copy_rows: rows of src [src_rows, width] into rows of dst [dst_rows, width].
struct RowsCopy {
  float* dst;
  const float* src;
  int64_t width;
};
// One side of copy_rows: idx (int32, or int64 when wide) over a table of `rows` rows, or
// null for positions 0..n-1.
struct RowSide {
  const void* idx;
  bool wide;
  int64_t rows;
};
// For each of `count` <= kMaxGatherParts tables: dst row to[i] = src row from[i], i < n (a
// negative destination skips the row, a negative source writes zeros; indices past their
// table are recorded in `fault`).
cudaError_t copy_rows(const RowsCopy* parts, int count, RowSide to, RowSide from, int64_t n,
                      IndexFault* fault, cudaStream_t stream);
// part = whole[:, offset:offset+width].
cudaError_t split_cols(const ColumnPart* parts, int count, const float* whole, int64_t rows,
                       int64_t total_width, cudaStream_t stream);

}  // namespace depbloom::kernels
