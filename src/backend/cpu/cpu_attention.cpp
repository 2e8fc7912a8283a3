// CPU masked softmax over neighbour slots and the fused one-query attention of TGN's
// temporal attention layer. The forward writes scores straight into `attn` and normalises
// them in place, so no scratch is needed; the backward keeps one score gradient per slot in
// a bounded stack buffer.
#include <cmath>
#include <limits>

#include "backend/cpu/cpu_math.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"

namespace depbloom::ops::cpu {
namespace {

// The most neighbour slots one attention row may have (stack scratch of the backward).
constexpr int64_t kMaxSlots = 1024;

template <class T>
T dot(const T* DB_RESTRICT a, const T* DB_RESTRICT b, int64_t n) {
  T acc = T(0);
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// In place over one row of k scores: masked softmax, masked slots and all-masked rows 0.
// y may alias x. Returns false when no slot is valid.
template <class T>
bool softmax_row(T* y, const T* x, const uint8_t* DB_RESTRICT mask, int64_t k) {
  T max = -std::numeric_limits<T>::infinity();
  bool any_valid = false;
  for (int64_t j = 0; j < k; ++j) {
    if (mask[j] == 0) continue;
    any_valid = true;
    max = std::max(max, x[j]);
  }
  if (!any_valid) {
    for (int64_t j = 0; j < k; ++j) y[j] = T(0);
    return false;
  }
  T total = T(0);
  // exp of every slot, masked ones dropped by a select: straight-line code that vectorises.
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < k; ++j) {
    const T e = exp_fast(x[j] - max);
    const T kept = mask[j] != 0 ? e : T(0);
    y[j] = kept;
    total += kept;
  }
  const T inv = T(1) / total;
  for (int64_t j = 0; j < k; ++j) y[j] *= inv;
  return true;
}

}  // namespace

void masked_softmax_forward(const Tensor& y, const Tensor& x, const Tensor& mask) {
  const int64_t rows = x.dim(0), slots = x.dim(1);
  const uint8_t* pmask = mask.data<uint8_t>();
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(rows, slots * 20, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        softmax_row(py + r * slots, px + r * slots, pmask + r * slots, slots);
    });
  });
}

void masked_softmax_backward(const Tensor& dx, const Tensor& dy, const Tensor& y) {
  const int64_t rows = y.dim(0), slots = y.dim(1);
  visit_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdy = dy.data<T>();
    const T* py = y.data<T>();
    T* pdx = dx.data<T>();
    parallel_for(rows, slots * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* DB_RESTRICT yr = py + r * slots;
        const T* dyr = pdy + r * slots;
        T* dxr = pdx + r * slots;  // may alias dyr: read the whole row first
        const T inner = dot(dyr, yr, slots);
        for (int64_t j = 0; j < slots; ++j) dxr[j] = yr[j] * (dyr[j] - inner);
      }
    });
  });
}

void attention_forward(const Tensor& out, const Tensor& attn, const Tensor& q, const Tensor& kv,
                       const Tensor& mask, int heads, double scale, double slope) {
  const int64_t rows = q.dim(0), width = q.dim(1), slots = kv.dim(1);
  const int64_t head_dim = width / heads, stride = 2 * width;  // a slot's key, then its value
  const uint8_t* pmask = mask.data<uint8_t>();
  visit_float(q.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pq = q.data<T>();
    const T* pk = kv.data<T>();
    const T* pv = pk + width;
    T* pout = out.data<T>();
    T* pattn = attn.data<T>();
    const T s = static_cast<T>(scale), leak = static_cast<T>(slope);
    parallel_for(rows, slots * width * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const uint8_t* m = pmask + r * slots;
        for (int64_t h = 0; h < heads; ++h) {
          const T* qh = pq + r * width + h * head_dim;
          T* a = pattn + (r * heads + h) * slots;
          for (int64_t j = 0; j < slots; ++j) {
            if (m[j] == 0) continue;  // softmax_row ignores masked slots
            const T u = s * dot(qh, pk + (r * slots + j) * stride + h * head_dim, head_dim);
            a[j] = u > T(0) ? u : leak * u;
          }
          softmax_row(a, a, m, slots);
          T* DB_RESTRICT o = pout + r * width + h * head_dim;
          for (int64_t d = 0; d < head_dim; ++d) o[d] = T(0);
          for (int64_t j = 0; j < slots; ++j) {
            if (m[j] == 0) continue;
            const T aj = a[j];
            const T* DB_RESTRICT vj = pv + (r * slots + j) * stride + h * head_dim;
#pragma omp simd
            for (int64_t d = 0; d < head_dim; ++d) o[d] += aj * vj[d];
          }
        }
      }
    });
  });
}

void attention_backward(const Tensor& dq, const Tensor& dkv, const Tensor& dout, const Tensor& attn,
                        const Tensor& q, const Tensor& kv, const Tensor& mask, int heads,
                        double scale, double slope) {
  const int64_t rows = q.dim(0), width = q.dim(1), slots = kv.dim(1);
  const int64_t head_dim = width / heads, stride = 2 * width;  // a slot's key, then its value
  DB_ASSERT(slots <= kMaxSlots,
            "attention_backward: the CPU backend handles up to {} neighbour slots, kv is {}",
            kMaxSlots, kv.str());
  const uint8_t* pmask = mask.data<uint8_t>();
  visit_float(q.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdout = dout.data<T>();
    const T* pattn = attn.data<T>();
    const T* pq = q.data<T>();
    const T* pk = kv.data<T>();
    const T* pv = pk + width;
    T* pdq = dq.data<T>();
    T* pdk = dkv.data<T>();
    T* pdv = pdk + width;
    const T s = static_cast<T>(scale), leak = static_cast<T>(slope);
    parallel_for(rows, slots * width * 10, [&](int64_t begin, int64_t end) {
      T d_attn[kMaxSlots];  // dL/da_j of the current (row, head)
      for (int64_t r = begin; r < end; ++r) {
        const uint8_t* m = pmask + r * slots;
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t off = h * head_dim;
          const T* DB_RESTRICT a = pattn + (r * heads + h) * slots;
          const T* DB_RESTRICT g = pdout + r * width + off;
          const T* DB_RESTRICT qh = pq + r * width + off;
          // out = sum_j a_j v_j: dv_j = a_j g, da_j = <g, v_j>.
          T weighted = T(0);  // sum_j a_j da_j, the softmax's shared term
          for (int64_t j = 0; j < slots; ++j) {
            const int64_t slot = (r * slots + j) * stride + off;
            T* DB_RESTRICT dvj = pdv + slot;
            if (m[j] == 0) {
              for (int64_t d = 0; d < head_dim; ++d) dvj[d] = T(0);
              d_attn[j] = T(0);
              continue;
            }
            d_attn[j] = dot(g, pv + slot, head_dim);
            weighted += a[j] * d_attn[j];
#pragma omp simd
            for (int64_t d = 0; d < head_dim; ++d) dvj[d] = a[j] * g[d];
          }
          // Through the softmax and the leaky ReLU to u_j = scale <q, k_j>.
          T* DB_RESTRICT dqh = pdq + r * width + off;
          for (int64_t d = 0; d < head_dim; ++d) dqh[d] = T(0);
          for (int64_t j = 0; j < slots; ++j) {
            const int64_t slot = (r * slots + j) * stride + off;
            T* DB_RESTRICT dkj = pdk + slot;
            if (m[j] == 0) {
              for (int64_t d = 0; d < head_dim; ++d) dkj[d] = T(0);
              continue;
            }
            const T* DB_RESTRICT kj = pk + slot;
            const T d_score = a[j] * (d_attn[j] - weighted);
            const T u = dot(qh, kj, head_dim);  // sign of scale * <q, k> needs scale's too
            const T d_u = d_score * ((s * u) > T(0) ? T(1) : leak) * s;
#pragma omp simd
            for (int64_t d = 0; d < head_dim; ++d) {
              dqh[d] += d_u * kj[d];
              dkj[d] = d_u * qh[d];
            }
          }
        }
      }
    });
  });
}

}  // namespace depbloom::ops::cpu
