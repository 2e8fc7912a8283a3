// Masked softmax over neighbour slots and the multi-head attention of one query over k
// neighbours, forward and backward. One warp per row (softmax) or per (row, head)
// (attention); dot products over the head dimension are lane-strided, hence coalesced.
#include "rowwise.cuh"

#include "detail/launch.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_warp;
using detail::grid_for;
using detail::grid_warps;
using detail::kBlock;
using detail::kFullMask;
using detail::kWarp;
using detail::kWarpsPerBlock;
using detail::lane_id;
using detail::warp_max;
using detail::warp_sum;

// y = exp(x - max) / sum over valid slots. Every lane derives the same max and sum (bit
// for bit, see warp_sum), so each lane can recompute its own exponentials for the output.
__global__ void masked_softmax_forward_kernel(float* y, const float* x, const uint8_t* mask,
                                              int64_t rows, int64_t k) {
  const int lane = lane_id();
  for (int64_t r = global_warp(); r < rows; r += grid_warps()) {
    const float* xr = x + r * k;
    const uint8_t* mr = mask + r * k;
    float* yr = y + r * k;
    float m = -INFINITY;
    bool any = false;
    for (int64_t j = lane; j < k; j += kWarp) {
      if (mr[j] != 0) {
        m = fmaxf(m, xr[j]);
        any = true;
      }
    }
    m = warp_max(m);
    if (!__any_sync(kFullMask, any)) {
      for (int64_t j = lane; j < k; j += kWarp) yr[j] = 0.0f;
      continue;
    }
    float s = 0.0f;
    for (int64_t j = lane; j < k; j += kWarp)
      if (mr[j] != 0) s += expf(xr[j] - m);
    const float inv = 1.0f / warp_sum(s);  // the CPU also multiplies by the inverse
    // y may alias x: each slot is read and written by the same lane, x first.
    for (int64_t j = lane; j < k; j += kWarp) yr[j] = mr[j] != 0 ? expf(xr[j] - m) * inv : 0.0f;
  }
}

// dx = y * (dy - sum_j dy_j y_j); masked slots have y = 0 and so get 0.
__global__ void masked_softmax_backward_kernel(float* dx, const float* dy, const float* y,
                                               int64_t rows, int64_t k) {
  const int lane = lane_id();
  for (int64_t r = global_warp(); r < rows; r += grid_warps()) {
    const float* dyr = dy + r * k;
    const float* yr = y + r * k;
    float c = 0.0f;
    for (int64_t j = lane; j < k; j += kWarp) c += dyr[j] * yr[j];
    c = warp_sum(c);
    float* dxr = dx + r * k;
    for (int64_t j = lane; j < k; j += kWarp) dxr[j] = yr[j] * (dyr[j] - c);
  }
}

// One warp per (row, head). attn doubles as scratch: pass 1 stores the scores, pass 2
// turns them into probabilities, pass 3 sums the values. A fully masked row ends with
// attn = 0 and out = 0 without a special case (no valid slot is ever read). k and v point
// into one [rows, slots, 2 * heads * dim] tensor: a slot's key, then its value.
__global__ void attention_forward_kernel(float* out, float* attn, const float* q, const float* k,
                                         const float* v, const uint8_t* mask, int64_t rows,
                                         int64_t slots, int64_t heads, int64_t dim, float scale,
                                         float slope) {
  const int lane = lane_id();
  const int64_t hd = heads * dim;
  for (int64_t w = global_warp(); w < rows * heads; w += grid_warps()) {
    const int64_t r = w / heads;
    const int64_t h = w - r * heads;
    const float* qh = q + r * hd + h * dim;
    const uint8_t* mr = mask + r * slots;
    float* ar = attn + w * slots;  // attn [rows, heads, slots]: row-head w
    float m = -INFINITY;
    for (int64_t j = 0; j < slots; ++j) {
      if (mr[j] == 0) {
        if (lane == 0) ar[j] = 0.0f;
        continue;
      }
      const float* kj = k + (r * slots + j) * 2 * hd + h * dim;
      float p = 0.0f;
      for (int64_t d = lane; d < dim; d += kWarp) p += qh[d] * kj[d];
      const float t = scale * warp_sum(p);
      const float s = t > 0.0f ? t : slope * t;
      if (lane == 0) ar[j] = s;
      m = fmaxf(m, s);  // same value in every lane
    }
    __syncwarp();  // lane 0's scores become visible to the other lanes
    float sum = 0.0f;
    for (int64_t j = lane; j < slots; j += kWarp) {
      if (mr[j] != 0) {
        const float e = expf(ar[j] - m);
        ar[j] = e;
        sum += e;
      }
    }
    const float inv = 1.0f / warp_sum(sum);
    for (int64_t j = lane; j < slots; j += kWarp)
      if (mr[j] != 0) ar[j] *= inv;
    __syncwarp();  // every lane reads every probability below
    float* oh = out + r * hd + h * dim;
    for (int64_t d = lane; d < dim; d += kWarp) {
      float acc = 0.0f;
      for (int64_t j = 0; j < slots; ++j)
        if (mr[j] != 0) acc += ar[j] * v[(r * slots + j) * 2 * hd + h * dim + d];
      oh[d] = acc;
    }
  }
}

// With a = attn, t_j = scale <q, k_j>, s_j = leaky(t_j), da_j = <dout, v_j>,
// c = sum_j a_j da_j:  ds_j = a_j (da_j - c), g_j = ds_j * leaky'(t_j) * scale,
//   dq = sum_j g_j k_j, dk_j = g_j q, dv_j = a_j dout; masked slots get dk = dv = 0.
// Scratch per row-head: da_j (then g_j) in `gs`, leaky'(t_j) in `fs`.
__global__ void attention_backward_kernel(float* dq, float* dk, float* dv, const float* dout,
                                          const float* attn, const float* q, const float* k,
                                          const float* v, const uint8_t* mask, int64_t rows,
                                          int64_t slots, int64_t heads, int64_t dim, float scale,
                                          float slope, float* gs_all, float* fs_all) {
  const int lane = lane_id();
  const int64_t hd = heads * dim;
  for (int64_t w = global_warp(); w < rows * heads; w += grid_warps()) {
    const int64_t r = w / heads;
    const int64_t h = w - r * heads;
    const float* qh = q + r * hd + h * dim;
    const float* doh = dout + r * hd + h * dim;
    const uint8_t* mr = mask + r * slots;
    const float* ar = attn + w * slots;
    float* gs = gs_all + w * slots;
    float* fs = fs_all + w * slots;
    // Pass A: both dot products per valid slot; t is recomputed for the sign of leaky'.
    float c = 0.0f;
    for (int64_t j = 0; j < slots; ++j) {
      if (mr[j] == 0) continue;
      const int64_t base = (r * slots + j) * 2 * hd + h * dim;
      float pv = 0.0f;
      float pk = 0.0f;
      for (int64_t d = lane; d < dim; d += kWarp) {
        pv += doh[d] * v[base + d];
        pk += qh[d] * k[base + d];
      }
      const float da = warp_sum(pv);
      const float t = scale * warp_sum(pk);
      c += ar[j] * da;  // same value in every lane
      if (lane == 0) {
        gs[j] = da;
        fs[j] = t > 0.0f ? 1.0f : slope;
      }
    }
    __syncwarp();
    // Pass B: the score gradients, one slot per lane.
    for (int64_t j = lane; j < slots; j += kWarp)
      if (mr[j] != 0) gs[j] = ar[j] * (gs[j] - c) * fs[j] * scale;
    __syncwarp();
    // Pass C: lanes over the head dimension, slots in order.
    for (int64_t d = lane; d < dim; d += kWarp) {
      const float qd = qh[d];
      const float dod = doh[d];
      float acc = 0.0f;
      for (int64_t j = 0; j < slots; ++j) {
        const int64_t i = (r * slots + j) * 2 * hd + h * dim + d;
        if (mr[j] != 0) {
          const float g = gs[j];
          acc += g * k[i];
          dk[i] = g * qd;
          dv[i] = ar[j] * dod;
        } else {
          dk[i] = 0.0f;
          dv[i] = 0.0f;
        }
      }
      dq[r * hd + h * dim + d] = acc;
    }
  }
}

}  // namespace

cudaError_t masked_softmax_forward(float* y, const float* x, const uint8_t* mask, int64_t rows,
                                   int64_t k, cudaStream_t stream) {
  if (rows <= 0 || k <= 0) return cudaSuccess;
  masked_softmax_forward_kernel<<<grid_for(rows, kWarpsPerBlock), kBlock, 0, stream>>>(y, x, mask,
                                                                                       rows, k);
  return cudaGetLastError();
}

cudaError_t masked_softmax_backward(float* dx, const float* dy, const float* y, int64_t rows,
                                    int64_t k, cudaStream_t stream) {
  if (rows <= 0 || k <= 0) return cudaSuccess;
  masked_softmax_backward_kernel<<<grid_for(rows, kWarpsPerBlock), kBlock, 0, stream>>>(dx, dy, y,
                                                                                        rows, k);
  return cudaGetLastError();
}

cudaError_t attention_forward(float* out, float* attn, const float* q, const float* kv,
                              const uint8_t* mask, int64_t rows, int64_t slots, int64_t heads,
                              int64_t dim, float scale, float slope, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0) return cudaSuccess;
  attention_forward_kernel<<<grid_for(rows * heads, kWarpsPerBlock), kBlock, 0, stream>>>(
      out, attn, q, kv, kv + heads * dim, mask, rows, slots, heads, dim, scale, slope);
  return cudaGetLastError();
}

size_t attention_backward_workspace_bytes(int64_t rows, int64_t slots, int64_t heads) {
  return 2 * static_cast<size_t>(rows * heads * slots) * sizeof(float);
}

cudaError_t attention_backward(float* dq, float* dkv, const float* dout, const float* attn,
                               const float* q, const float* kv, const uint8_t* mask, int64_t rows,
                               int64_t slots, int64_t heads, int64_t dim, float scale, float slope,
                               void* workspace, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0) return cudaSuccess;
  if (slots > 0 && workspace == nullptr) return cudaErrorInvalidValue;
  auto* gs = static_cast<float*>(workspace);
  float* fs = gs + rows * heads * slots;
  const int64_t hd = heads * dim;
  attention_backward_kernel<<<grid_for(rows * heads, kWarpsPerBlock), kBlock, 0, stream>>>(
      dq, dkv, dkv + hd, dout, attn, q, kv, kv + hd, mask, rows, slots, heads, dim, scale, slope,
      gs, fs);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels
