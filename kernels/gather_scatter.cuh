// Launchers of the row gather/scatter and column concat/split kernels (gather_scatter.cu,
// and sort.cu for the deterministic scatter): plain C++ declarations over raw device
// pointers. Index arrays are int32 or int64; a negative index means "no row" (padding).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace depbloom::kernels {

// out [n, width] row i = src [src_rows, width] row idx[i]; a negative or out-of-range
// index gives a zero row (the range is checked on the CPU; here it only guards memory).
cudaError_t gather_rows(float* out, const float* src, const int32_t* idx, int64_t n, int64_t width,
                        int64_t src_rows, cudaStream_t stream);
cudaError_t gather_rows(float* out, const float* src, const int64_t* idx, int64_t n, int64_t width,
                        int64_t src_rows, cudaStream_t stream);

// dst [dst_rows, width] row idx[i] += src [n, width] row i with atomicAdd (order-dependent
// rounding). Negative or out-of-range indices are skipped.
cudaError_t scatter_add_rows_atomic(float* dst, const float* src, const int32_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, cudaStream_t stream);
cudaError_t scatter_add_rows_atomic(float* dst, const float* src, const int64_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, cudaStream_t stream);

// The same sum, deterministic (sort.cu): a stable radix sort of (row, position) pairs,
// then one thread per (destination row, column) adds its sources in position order onto
// the old value, exactly as a sequential loop over i would. Needs n < 2^31 and
// dst_rows < 2^32 - 1, and the workspace below.
size_t scatter_add_rows_sorted_workspace_bytes(int64_t n, int64_t dst_rows);
cudaError_t scatter_add_rows_sorted(float* dst, const float* src, const int32_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, void* workspace,
                                    size_t workspace_bytes, cudaStream_t stream);
cudaError_t scatter_add_rows_sorted(float* dst, const float* src, const int64_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, void* workspace,
                                    size_t workspace_bytes, cudaStream_t stream);

// dst [dst_rows, width] row idx[i] = src [n, width] row i (overwrite). Negative or
// out-of-range indices are skipped; with duplicate indices an unspecified source wins.
cudaError_t scatter_rows(float* dst, const float* src, const int32_t* idx, int64_t n, int64_t width,
                         int64_t dst_rows, cudaStream_t stream);
cudaError_t scatter_rows(float* dst, const float* src, const int64_t* idx, int64_t n, int64_t width,
                         int64_t dst_rows, cudaStream_t stream);

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
// part = whole[:, offset:offset+width].
cudaError_t split_cols(const ColumnPart* parts, int count, const float* whole, int64_t rows,
                       int64_t total_width, cudaStream_t stream);

}  // namespace depbloom::kernels
