// Device-side deterministic reductions (nvcc only): column sums of a [rows, cols] function
// (bias, layer-norm and time-encoding gradients) and scalar sums of an [n] function (sum,
// sum of squares, BCE loss). The block partition is a function of the shape alone and
// every tree has a fixed order, so a rerun gives the same bits; partial sums are double.
#pragma once

#include <cstdint>

#include "detail/launch.cuh"

namespace depbloom::kernels::detail {

// ---- column reductions: out_k[c] += sum_r f(r, c)[k], k < kOut -------------------------
// A block covers 32 columns x one chunk of rows; its 8 row lanes stride through the chunk.
// With one chunk the block adds into out directly, otherwise a second kernel adds the
// chunks' partials (double [chunks][kOut][cols] in the workspace) in chunk order.
constexpr int kColTile = 32;
constexpr int kRowLanes = 8;

struct ColumnPlan {
  int64_t col_tiles = 1;
  int64_t chunks = 1;
  int64_t rows_per_chunk = 1;
};

inline ColumnPlan column_plan(int64_t rows, int64_t cols) {
  ColumnPlan plan;
  plan.col_tiles = (cols + kColTile - 1) / kColTile;
  if (plan.col_tiles < 1) plan.col_tiles = 1;
  // About 2048 blocks in all, and at least 64 rows per chunk so the partials stay small.
  int64_t max_chunks = 2048 / plan.col_tiles;
  if (max_chunks < 1) max_chunks = 1;
  int64_t chunks = (rows + 63) / 64;
  if (chunks > max_chunks) chunks = max_chunks;
  if (chunks < 1) chunks = 1;
  plan.rows_per_chunk = rows > 0 ? (rows + chunks - 1) / chunks : 1;
  plan.chunks = rows > 0 ? (rows + plan.rows_per_chunk - 1) / plan.rows_per_chunk : 1;
  return plan;
}

inline size_t column_workspace_bytes(int64_t rows, int64_t cols, int outputs) {
  const ColumnPlan plan = column_plan(rows, cols);
  if (plan.chunks <= 1) return 0;
  return static_cast<size_t>(plan.chunks * outputs * cols) * sizeof(double);
}

template <int kOut, class F>
__global__ void column_partials_kernel(F f, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                       double* partials, float* out0, float* out1) {
  __shared__ double tile[kOut][kRowLanes][kColTile];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  const int64_t r_begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r_end = r_begin + rows_per_chunk < rows ? r_begin + rows_per_chunk : rows;
  double acc[kOut];
  for (int k = 0; k < kOut; ++k) acc[k] = 0.0;
  if (c < cols) {
    for (int64_t r = r_begin + ty; r < r_end; r += kRowLanes) {
      double v[kOut];
      f(r, c, v);
      for (int k = 0; k < kOut; ++k) acc[k] += v[k];
    }
  }
  for (int k = 0; k < kOut; ++k) tile[k][ty][tx] = acc[k];
  __syncthreads();
  if (ty != 0 || c >= cols) return;
  for (int k = 0; k < kOut; ++k) {
    double s = tile[k][0][tx];
    for (int i = 1; i < kRowLanes; ++i) s += tile[k][i][tx];
    if (gridDim.y == 1) {
      float* out = k == 0 ? out0 : out1;
      out[c] += static_cast<float>(s);
    } else {
      partials[(static_cast<int64_t>(blockIdx.y) * kOut + k) * cols + c] = s;
    }
  }
}

template <int kOut>
__global__ void column_finish_kernel(const double* partials, int64_t chunks, int64_t cols,
                                     float* out0, float* out1) {
  for (int64_t c = global_thread(); c < cols; c += grid_threads()) {
    for (int k = 0; k < kOut; ++k) {
      double s = 0.0;
      for (int64_t ch = 0; ch < chunks; ++ch) s += partials[(ch * kOut + k) * cols + c];
      float* out = k == 0 ? out0 : out1;
      out[c] += static_cast<float>(s);
    }
  }
}

// f: __device__ void operator()(int64_t r, int64_t c, double v[kOut]) const.
template <int kOut, class F>
cudaError_t column_reduce(const F& f, int64_t rows, int64_t cols, float* out0, float* out1,
                          void* workspace, cudaStream_t stream) {
  static_assert(kOut == 1 || kOut == 2, "one or two outputs");
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const ColumnPlan plan = column_plan(rows, cols);
  if (plan.chunks > 1 && workspace == nullptr) return cudaErrorInvalidValue;
  auto* partials = static_cast<double*>(workspace);
  const dim3 grid(static_cast<unsigned>(plan.col_tiles), static_cast<unsigned>(plan.chunks));
  const dim3 block(kColTile, kRowLanes);
  column_partials_kernel<kOut>
      <<<grid, block, 0, stream>>>(f, rows, cols, plan.rows_per_chunk, partials, out0, out1);
  if (plan.chunks == 1) return cudaGetLastError();
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  column_finish_kernel<kOut>
      <<<grid_for(cols), kBlock, 0, stream>>>(partials, plan.chunks, cols, out0, out1);
  return cudaGetLastError();
}

// ---- scalar reductions: *out = (sum_i f(i)) / divisor -----------------------------------
// Each block strides over [0, n) with a fixed block count, reduces in a fixed tree and
// writes a double partial; a single block then adds the partials in order.
constexpr int64_t kMaxScalarBlocks = 1024;

inline int64_t scalar_blocks(int64_t n) {
  int64_t blocks = (n + kBlock * 4 - 1) / (kBlock * 4);
  if (blocks > kMaxScalarBlocks) blocks = kMaxScalarBlocks;
  return blocks < 1 ? 1 : blocks;
}

inline size_t scalar_workspace_bytes(int64_t n) {
  const int64_t blocks = scalar_blocks(n);
  return blocks > 1 ? static_cast<size_t>(blocks) * sizeof(double) : 0;
}

template <class F>
__global__ void scalar_partials_kernel(F f, int64_t n, double* partials, float* out,
                                       double divisor) {
  double acc = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) acc += f(i);
  acc = block_sum(acc);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) {
    *out = static_cast<float>(acc / divisor);
  } else {
    partials[blockIdx.x] = acc;
  }
}

template <class T>
__global__ void scalar_finish_kernel(const T* partials, int64_t count, float* out, T divisor) {
  T acc = T(0);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = static_cast<float>(acc / divisor);
}

// f: __device__ double operator()(int64_t i) const. n == 0 writes 0 / divisor.
template <class F>
cudaError_t scalar_reduce(const F& f, int64_t n, float* out, double divisor, void* workspace,
                          cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  const int64_t blocks = scalar_blocks(n);
  if (blocks > 1 && workspace == nullptr) return cudaErrorInvalidValue;
  auto* partials = static_cast<double*>(workspace);
  scalar_partials_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(f, n, partials, out,
                                                                               divisor);
  if (blocks == 1) return cudaGetLastError();
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  scalar_finish_kernel<double><<<1, kBlock, 0, stream>>>(partials, blocks, out, divisor);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels::detail
