// Row gather, atomic row scatter-add, row scatter, several tables' rows by one mapping
// (copy_rows), and column concat/split. Blocks of
// 32 x 8 threads: each threadIdx.y takes a row, its 32 lanes stride over the columns, so
// every row is read and written in coalesced 128-byte pieces and each index is loaded
// once per row. A table of width 1 gets one thread per row instead (32 lanes for one
// column would leave 31 idle). Indices past the table are recorded (detail/index_fault.cuh).
#include "gather_scatter.cuh"

#include "detail/index_fault.cuh"
#include "detail/launch.cuh"
#include "detail/time_code.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_thread;
using detail::grid_for;
using detail::grid_threads;
using detail::kBlock;
using detail::kWarp;
using detail::past_table;

constexpr int kRowsPerBlock = 8;
const dim3 kRowBlock(kWarp, kRowsPerBlock);

__device__ __forceinline__ int64_t first_row() {
  return static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
}
__device__ __forceinline__ int64_t row_stride() {
  return static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
}

template <class Index>
__global__ void gather_rows_kernel(float* out, const float* src, const Index* idx, int64_t n,
                                   int64_t width, int64_t src_rows, bool accumulate,
                                   IndexFault* fault) {
  for (int64_t i = first_row(); i < n; i += row_stride()) {
    const auto row = static_cast<int64_t>(idx[i]);
    float* o = out + i * width;
    if (row < 0 || past_table(fault, kGatherRows, row, src_rows)) {
      if (!accumulate)
        for (int64_t c = threadIdx.x; c < width; c += kWarp) o[c] = 0.0f;
    } else {
      const float* s = src + row * width;
      if (accumulate) {
        for (int64_t c = threadIdx.x; c < width; c += kWarp) o[c] += s[c];
      } else {
        for (int64_t c = threadIdx.x; c < width; c += kWarp) o[c] = s[c];
      }
    }
  }
}

// Width 1: one thread per row, coalesced over the rows.
template <class Index>
__global__ void gather_column_kernel(float* out, const float* src, const Index* idx, int64_t n,
                                     int64_t src_rows, bool accumulate, IndexFault* fault) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const auto row = static_cast<int64_t>(idx[i]);
    const bool skip = row < 0 || past_table(fault, kGatherRows, row, src_rows);
    if (!accumulate) {
      out[i] = skip ? 0.0f : src[row];
    } else if (!skip) {
      out[i] += src[row];
    }
  }
}

template <class Index>
__global__ void scatter_add_atomic_kernel(float* dst, const float* src, const Index* idx, int64_t n,
                                          int64_t width, int64_t dst_rows, IndexFault* fault) {
  for (int64_t i = first_row(); i < n; i += row_stride()) {
    const auto row = static_cast<int64_t>(idx[i]);
    if (row < 0 || past_table(fault, kScatterAddRows, row, dst_rows)) continue;
    float* d = dst + row * width;
    const float* s = src + i * width;
    for (int64_t c = threadIdx.x; c < width; c += kWarp) atomicAdd(d + c, s[c]);
  }
}

// Overwrite: distinct indices by contract, so no atomics; with duplicates the last store to
// reach memory wins (unspecified).
template <class Index>
__global__ void scatter_rows_kernel(float* dst, const float* src, const Index* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, IndexFault* fault) {
  for (int64_t i = first_row(); i < n; i += row_stride()) {
    const auto row = static_cast<int64_t>(idx[i]);
    if (row < 0 || past_table(fault, kScatterRows, row, dst_rows)) continue;
    float* d = dst + row * width;
    const float* s = src + i * width;
    for (int64_t c = threadIdx.x; c < width; c += kWarp) d[c] = s[c];
  }
}

// Up to kMaxColumnParts parts travel by value in the kernel parameters; blockIdx.y picks one.
struct PartList {
  ColumnPart part[kMaxColumnParts];
};

// whole[:, p.offset : p.offset + p.width] = p, by this block's rows.
__device__ __forceinline__ void copy_into_columns(float* whole, int64_t rows, int64_t total_width,
                                                  const ColumnPart& p) {
  for (int64_t r = first_row(); r < rows; r += row_stride()) {
    const float* s = p.data + r * p.width;
    float* d = whole + r * total_width + p.offset;
    for (int64_t c = threadIdx.x; c < p.width; c += kWarp) d[c] = s[c];
  }
}

__global__ void concat_kernel(float* whole, int64_t rows, int64_t total_width, PartList list) {
  copy_into_columns(whole, rows, total_width, list.part[blockIdx.y]);
}

// concat_kernel's blocks, and one more column of blocks (blockIdx.y == count) for the time
// encoding in the columns after the parts.
struct TimeCode {
  const float* dt;  // null: zero deltas
  const float* w;
  const float* b;
  int64_t offset, dims;
};

__global__ void concat_time_encode_kernel(float* whole, int64_t rows, int64_t total_width,
                                          PartList list, int count, TimeCode code) {
  if (static_cast<int>(blockIdx.y) < count) {
    copy_into_columns(whole, rows, total_width, list.part[blockIdx.y]);
    return;
  }
  for (int64_t r = first_row(); r < rows; r += row_stride()) {
    const float t = code.dt == nullptr ? 0.0f : code.dt[r];
    float* d = whole + r * total_width + code.offset;
    for (int64_t c = threadIdx.x; c < code.dims; c += kWarp)
      d[c] = detail::time_code(t, code.w[c], code.b[c]);
  }
}

struct GatherList {
  GatherColumns part[kMaxGatherParts];
};

__global__ void gather_cols_kernel(float* out, int64_t rows, int64_t total_width, GatherList list,
                                   IndexFault* fault) {
  const GatherColumns p = list.part[blockIdx.y];
  for (int64_t r = first_row(); r < rows; r += row_stride()) {
    const int64_t row = p.wide ? static_cast<const int64_t*>(p.idx)[r]
                               : static_cast<int64_t>(static_cast<const int32_t*>(p.idx)[r]);
    float* o = out + r * total_width + p.offset;
    if (row < 0 || past_table(fault, kGatherCols, row, p.src_rows)) {
      for (int64_t c = threadIdx.x; c < p.width; c += kWarp) o[c] = 0.0f;
    } else {
      const float* s = p.src + row * p.width;
      for (int64_t c = threadIdx.x; c < p.width; c += kWarp) o[c] = s[c];
    }
  }
}

struct RowsList {
  RowsCopy part[kMaxGatherParts];
};

__device__ __forceinline__ int64_t side_row(const RowSide& side, int64_t i) {
  if (side.idx == nullptr) return i;
  return side.wide ? static_cast<const int64_t*>(side.idx)[i]
                   : static_cast<int64_t>(static_cast<const int32_t*>(side.idx)[i]);
}

// blockIdx.y picks the table; every table checks the indices, so a fault is recorded once
// whichever table meets it first.
__global__ void copy_rows_kernel(RowsList list, RowSide to, RowSide from, int64_t n,
                                 IndexFault* fault) {
  const RowsCopy p = list.part[blockIdx.y];
  for (int64_t i = first_row(); i < n; i += row_stride()) {
    const int64_t d = side_row(to, i);
    if (d < 0 || past_table(fault, kCopyRows, d, to.rows)) continue;
    const int64_t s = side_row(from, i);
    float* o = p.dst + d * p.width;
    if (s < 0 || past_table(fault, kCopyRows, s, from.rows)) {
      for (int64_t c = threadIdx.x; c < p.width; c += kWarp) o[c] = 0.0f;
    } else {
      const float* in = p.src + s * p.width;
      for (int64_t c = threadIdx.x; c < p.width; c += kWarp) o[c] = in[c];
    }
  }
}

__global__ void split_kernel(PartList list, const float* whole, int64_t rows, int64_t total_width) {
  const ColumnPart p = list.part[blockIdx.y];
  for (int64_t r = first_row(); r < rows; r += row_stride()) {
    const float* s = whole + r * total_width + p.offset;
    float* d = p.data + r * p.width;
    for (int64_t c = threadIdx.x; c < p.width; c += kWarp) d[c] = s[c];
  }
}

template <class Index>
cudaError_t launch_gather(float* out, const float* src, const Index* idx, int64_t n, int64_t width,
                          int64_t src_rows, bool accumulate, IndexFault* fault,
                          cudaStream_t stream) {
  if (n <= 0 || width <= 0) return cudaSuccess;
  if (width == 1) {
    gather_column_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, src, idx, n, src_rows, accumulate,
                                                             fault);
  } else {
    gather_rows_kernel<<<grid_for(n, kRowsPerBlock), kRowBlock, 0, stream>>>(
        out, src, idx, n, width, src_rows, accumulate, fault);
  }
  return cudaGetLastError();
}

template <class Index>
cudaError_t launch_scatter_atomic(float* dst, const float* src, const Index* idx, int64_t n,
                                  int64_t width, int64_t dst_rows, IndexFault* fault,
                                  cudaStream_t stream) {
  if (n <= 0 || width <= 0) return cudaSuccess;
  scatter_add_atomic_kernel<<<grid_for(n, kRowsPerBlock), kRowBlock, 0, stream>>>(
      dst, src, idx, n, width, dst_rows, fault);
  return cudaGetLastError();
}

template <class Index>
cudaError_t launch_scatter(float* dst, const float* src, const Index* idx, int64_t n, int64_t width,
                           int64_t dst_rows, IndexFault* fault, cudaStream_t stream) {
  if (n <= 0 || width <= 0) return cudaSuccess;
  scatter_rows_kernel<<<grid_for(n, kRowsPerBlock), kRowBlock, 0, stream>>>(dst, src, idx, n, width,
                                                                            dst_rows, fault);
  return cudaGetLastError();
}

bool fill_part_list(PartList& list, const ColumnPart* parts, int count) {
  if (count < 0 || count > kMaxColumnParts) return false;
  for (int i = 0; i < kMaxColumnParts; ++i) list.part[i] = i < count ? parts[i] : ColumnPart{};
  return true;
}

}  // namespace

cudaError_t gather_rows(float* out, const float* src, const int32_t* idx, int64_t n, int64_t width,
                        int64_t src_rows, bool accumulate, IndexFault* fault, cudaStream_t stream) {
  return launch_gather(out, src, idx, n, width, src_rows, accumulate, fault, stream);
}
cudaError_t gather_rows(float* out, const float* src, const int64_t* idx, int64_t n, int64_t width,
                        int64_t src_rows, bool accumulate, IndexFault* fault, cudaStream_t stream) {
  return launch_gather(out, src, idx, n, width, src_rows, accumulate, fault, stream);
}

cudaError_t scatter_add_rows_atomic(float* dst, const float* src, const int32_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, IndexFault* fault,
                                    cudaStream_t stream) {
  return launch_scatter_atomic(dst, src, idx, n, width, dst_rows, fault, stream);
}
cudaError_t scatter_add_rows_atomic(float* dst, const float* src, const int64_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, IndexFault* fault,
                                    cudaStream_t stream) {
  return launch_scatter_atomic(dst, src, idx, n, width, dst_rows, fault, stream);
}

cudaError_t scatter_rows(float* dst, const float* src, const int32_t* idx, int64_t n, int64_t width,
                         int64_t dst_rows, IndexFault* fault, cudaStream_t stream) {
  return launch_scatter(dst, src, idx, n, width, dst_rows, fault, stream);
}
cudaError_t scatter_rows(float* dst, const float* src, const int64_t* idx, int64_t n, int64_t width,
                         int64_t dst_rows, IndexFault* fault, cudaStream_t stream) {
  return launch_scatter(dst, src, idx, n, width, dst_rows, fault, stream);
}

cudaError_t concat_cols(float* whole, int64_t rows, int64_t total_width, const ColumnPart* parts,
                        int count, cudaStream_t stream) {
  PartList list;
  if (!fill_part_list(list, parts, count)) return cudaErrorInvalidValue;
  if (rows <= 0 || count == 0) return cudaSuccess;
  const dim3 grid(grid_for(rows, kRowsPerBlock), static_cast<unsigned>(count));
  concat_kernel<<<grid, kRowBlock, 0, stream>>>(whole, rows, total_width, list);
  return cudaGetLastError();
}

cudaError_t concat_cols_time_encode(float* whole, int64_t rows, int64_t total_width,
                                    const ColumnPart* parts, int count, const float* dt,
                                    const float* w, const float* b, cudaStream_t stream) {
  PartList list;
  if (!fill_part_list(list, parts, count)) return cudaErrorInvalidValue;
  const int64_t offset = count == 0 ? 0 : parts[count - 1].offset + parts[count - 1].width;
  if (rows <= 0 || offset >= total_width) return cudaSuccess;
  const TimeCode code{dt, w, b, offset, total_width - offset};
  const dim3 grid(grid_for(rows, kRowsPerBlock), static_cast<unsigned>(count + 1));
  concat_time_encode_kernel<<<grid, kRowBlock, 0, stream>>>(whole, rows, total_width, list, count,
                                                            code);
  return cudaGetLastError();
}

cudaError_t gather_cols(float* out, int64_t rows, int64_t total_width, const GatherColumns* parts,
                        int count, IndexFault* fault, cudaStream_t stream) {
  if (count < 1 || count > kMaxGatherParts) return cudaErrorInvalidValue;
  if (rows <= 0) return cudaSuccess;
  GatherList list{};
  for (int i = 0; i < count; ++i) list.part[i] = parts[i];
  const dim3 grid(grid_for(rows, kRowsPerBlock), static_cast<unsigned>(count));
  gather_cols_kernel<<<grid, kRowBlock, 0, stream>>>(out, rows, total_width, list, fault);
  return cudaGetLastError();
}

cudaError_t copy_rows(const RowsCopy* parts, int count, RowSide to, RowSide from, int64_t n,
                      IndexFault* fault, cudaStream_t stream) {
  if (count < 1 || count > kMaxGatherParts) return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  RowsList list{};
  for (int i = 0; i < count; ++i) list.part[i] = parts[i];
  const dim3 grid(grid_for(n, kRowsPerBlock), static_cast<unsigned>(count));
  copy_rows_kernel<<<grid, kRowBlock, 0, stream>>>(list, to, from, n, fault);
  return cudaGetLastError();
}

cudaError_t split_cols(const ColumnPart* parts, int count, const float* whole, int64_t rows,
                       int64_t total_width, cudaStream_t stream) {
  PartList list;
  if (!fill_part_list(list, parts, count)) return cudaErrorInvalidValue;
  if (rows <= 0 || count == 0) return cudaSuccess;
  const dim3 grid(grid_for(rows, kRowsPerBlock), static_cast<unsigned>(count));
  split_kernel<<<grid, kRowBlock, 0, stream>>>(list, whole, rows, total_width);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels
