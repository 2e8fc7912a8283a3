// Device-side helpers shared by the kernel files (nvcc only, never included by .cpp files):
// launch geometry for grid-stride loops and warp reductions whose order is fixed, so every
// lane ends with the same bits and reruns give the same result.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace depbloom::kernels::detail {

constexpr int kBlock = 256;  // threads per block of the 1-D kernels
constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kBlock / kWarp;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kMaxGrid = 65536;  // beyond this, grid-stride loops take over

// Blocks for a grid-stride loop over `items` work items of `per_block` each.
inline unsigned grid_for(int64_t items, int64_t per_block = kBlock) {
  int64_t g = (items + per_block - 1) / per_block;
  if (g < 1) g = 1;
  if (g > kMaxGrid) g = kMaxGrid;
  return static_cast<unsigned>(g);
}

// Calls fn(I{}) with I = uint32_t when every index of a grid-stride loop over n items fits
// (n < 2^31, so i + stride < 2^32 too), else int64_t: kernels that split an element index
// into row and column then divide in 32 bits, several times cheaper than 64-bit division.
template <class Fn>
auto with_index_type(int64_t n, const Fn& fn) {
  return n < (int64_t{1} << 31) ? fn(uint32_t{}) : fn(int64_t{});
}

// Global id and stride of a 1-D grid-stride loop.
__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}
// Same for one warp per work item.
__device__ __forceinline__ int64_t global_warp() {
  return global_thread() / kWarp;
}
__device__ __forceinline__ int64_t grid_warps() {
  return grid_threads() / kWarp;
}
__device__ __forceinline__ int lane_id() {
  return static_cast<int>(threadIdx.x) % kWarp;
}

// Butterfly sum: every lane adds the same two operands at each level (addition commutes),
// so all lanes get bit-identical results, independent of scheduling.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

template <class T>
__device__ __forceinline__ T warp_max(T v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = max(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Sum over a block of kBlock threads in a fixed order: warp butterflies, then warp 0 sums
// the warp totals. The result is valid in thread 0 only.
template <class T>
__device__ __forceinline__ T block_sum(T v) {
  __shared__ T warp_totals[kWarpsPerBlock];
  v = warp_sum(v);
  if (lane_id() == 0) warp_totals[threadIdx.x / kWarp] = v;
  __syncthreads();
  T total = T(0);
  if (threadIdx.x < kWarp) {
    total = threadIdx.x < kWarpsPerBlock ? warp_totals[threadIdx.x] : T(0);
    total = warp_sum(total);
  }
  return total;
}

}  // namespace depbloom::kernels::detail
