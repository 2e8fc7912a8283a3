// The deterministic scatter-add of rows: a stable CUB radix sort of (destination row,
// source position) pairs groups the sources of each row in position order, then one thread
// per (row, column) adds them onto the old value in that order. The only file that
// includes CUB (it dominates compile time).
#include <cub/device/device_radix_sort.cuh>

#include "detail/index_fault.cuh"
#include "detail/launch.cuh"
#include "gather_scatter.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_thread;
using detail::grid_for;
using detail::grid_threads;
using detail::kBlock;
using detail::kWarp;
using detail::past_table;

constexpr int kRowsPerBlock = 8;

// Indices outside [0, dst_rows) get the key dst_rows, which sorts last and is skipped; those
// past the table are recorded in `fault`.
template <class Index>
__global__ void make_keys_kernel(uint32_t* keys, int32_t* positions, const Index* idx, int64_t n,
                                 int64_t dst_rows, IndexFault* fault) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const auto row = static_cast<int64_t>(idx[i]);
    const bool skip = row < 0 || past_table(fault, kScatterAddRows, row, dst_rows);
    keys[i] = static_cast<uint32_t>(skip ? dst_rows : row);
    positions[i] = static_cast<int32_t>(i);
  }
}

// threadIdx.y takes a sorted position; only the first position of each key's segment does
// work, its 32 lanes striding over the columns. Each destination row is owned by exactly
// one warp, so there are no races and the order of additions is fixed: old value first,
// then the sources in increasing position, as a sequential loop over i would add them.
__global__ void segment_add_kernel(float* dst, const float* src, const uint32_t* keys,
                                   const int32_t* positions, int64_t n, int64_t width,
                                   uint32_t skip_key) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y; p < n;
       p += stride) {
    const uint32_t key = keys[p];
    if (key == skip_key || (p > 0 && keys[p - 1] == key)) continue;
    float* d = dst + static_cast<int64_t>(key) * width;
    for (int64_t c = threadIdx.x; c < width; c += kWarp) {
      float acc = d[c];
      for (int64_t q = p; q < n && keys[q] == key; ++q)
        acc += src[static_cast<int64_t>(positions[q]) * width + c];
      d[c] = acc;
    }
  }
}

// Bits the radix sort must look at: enough for the largest key, dst_rows itself.
int key_bits(int64_t dst_rows) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= dst_rows) ++bits;
  return bits;
}

size_t align_up(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// Workspace: keys and positions, two buffers each (the sort ping-pongs), then CUB's own
// temporary storage. total is 0 when CUB cannot size it.
SortedScatterBytes sorted_layout(int64_t n, int64_t dst_rows) {
  SortedScatterBytes b;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
  cub::DoubleBuffer<int32_t> positions(nullptr, nullptr);
  if (cub::DeviceRadixSort::SortPairs(nullptr, b.cub, keys, positions, static_cast<int>(n), 0,
                                      key_bits(dst_rows)) != cudaSuccess) {
    return SortedScatterBytes{};
  }
  const size_t array = align_up(static_cast<size_t>(n) * sizeof(uint32_t));
  b.total = 4 * array + align_up(b.cub);
  return b;
}

template <class Index>
cudaError_t launch_sorted(float* dst, const float* src, const Index* idx, int64_t n, int64_t width,
                          int64_t dst_rows, void* workspace, SortedScatterBytes bytes,
                          IndexFault* fault, cudaStream_t stream) {
  if (n <= 0 || width <= 0) return cudaSuccess;
  if (n > INT32_MAX || dst_rows < 0 || dst_rows >= int64_t{UINT32_MAX}) {
    return cudaErrorInvalidValue;
  }
  // The caller's size query already ran CUB's: the layout follows from n and bytes.cub.
  const size_t array = align_up(static_cast<size_t>(n) * sizeof(uint32_t));
  if (workspace == nullptr || bytes.total < 4 * array + align_up(bytes.cub)) {
    return cudaErrorInvalidValue;
  }
  auto* base = static_cast<char*>(workspace);
  auto* keys0 = reinterpret_cast<uint32_t*>(base);
  auto* keys1 = reinterpret_cast<uint32_t*>(base + array);
  auto* pos0 = reinterpret_cast<int32_t*>(base + 2 * array);
  auto* pos1 = reinterpret_cast<int32_t*>(base + 3 * array);
  void* cub_temp = base + 4 * array;

  make_keys_kernel<<<grid_for(n), kBlock, 0, stream>>>(keys0, pos0, idx, n, dst_rows, fault);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  cub::DoubleBuffer<uint32_t> keys(keys0, keys1);
  cub::DoubleBuffer<int32_t> positions(pos0, pos1);
  size_t cub_bytes = bytes.cub;
  if (cudaError_t e = cub::DeviceRadixSort::SortPairs(
          cub_temp, cub_bytes, keys, positions, static_cast<int>(n), 0, key_bits(dst_rows), stream);
      e != cudaSuccess) {
    return e;
  }
  const dim3 block(kWarp, kRowsPerBlock);
  segment_add_kernel<<<grid_for(n, kRowsPerBlock), block, 0, stream>>>(
      dst, src, keys.Current(), positions.Current(), n, width, static_cast<uint32_t>(dst_rows));
  return cudaGetLastError();
}

}  // namespace

SortedScatterBytes scatter_add_rows_sorted_workspace_bytes(int64_t n, int64_t dst_rows) {
  if (n <= 0 || n > INT32_MAX) return SortedScatterBytes{};
  return sorted_layout(n, dst_rows);
}

cudaError_t scatter_add_rows_sorted(float* dst, const float* src, const int32_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, void* workspace,
                                    SortedScatterBytes bytes, IndexFault* fault,
                                    cudaStream_t stream) {
  return launch_sorted(dst, src, idx, n, width, dst_rows, workspace, bytes, fault, stream);
}

cudaError_t scatter_add_rows_sorted(float* dst, const float* src, const int64_t* idx, int64_t n,
                                    int64_t width, int64_t dst_rows, void* workspace,
                                    SortedScatterBytes bytes, IndexFault* fault,
                                    cudaStream_t stream) {
  return launch_sorted(dst, src, idx, n, width, dst_rows, workspace, bytes, fault, stream);
}

}  // namespace depbloom::kernels
