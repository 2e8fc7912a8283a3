// CPU element-wise ops: activations and their gradients, dropout with counter-based masks,
// fill, copy, axpy, scale, and the fixed-order sums. One pass over memory each; dropout's
// mask is a pure function of (key, global row, column), so any split of rows agrees.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_math.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"

namespace depbloom::ops::cpu {
namespace {

// Rough cost of one element in flops, for the parallel threshold.
constexpr int64_t kCheapCost = 1;
constexpr int64_t kTranscendentalCost = 20;
constexpr int64_t kPhiloxCost = 40;
constexpr int64_t kDrawBlock = 64;  // dropout's draws per block of a row

template <class Fn>
void map_elements(int64_t n, int64_t cost, const Fn& fn) {
  parallel_for(n, cost, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace

void act_forward(Act act, const Tensor& y, const Tensor& x, double slope) {
  const int64_t n = x.numel();
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();  // may alias py: no restrict here
    T* py = y.data<T>();
    const T s = static_cast<T>(slope);
    switch (act) {
      case Act::relu:
        map_elements(n, kCheapCost, [&](int64_t i) { py[i] = px[i] > T(0) ? px[i] : T(0); });
        break;
      case Act::leaky_relu:
        map_elements(n, kCheapCost, [&](int64_t i) { py[i] = px[i] > T(0) ? px[i] : s * px[i]; });
        break;
      case Act::sigmoid:
        map_elements(n, kTranscendentalCost, [&](int64_t i) { py[i] = sigmoid_fast(px[i]); });
        break;
      case Act::tanh:
        map_elements(n, kTranscendentalCost, [&](int64_t i) { py[i] = tanh_fast(px[i]); });
        break;
    }
  });
}

void act_backward(Act act, const Tensor& dx, const Tensor& dy, const Tensor& y, double slope) {
  const int64_t n = y.numel();
  visit_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdy = dy.data<T>();  // may alias pdx
    const T* py = y.data<T>();
    T* pdx = dx.data<T>();
    const T s = static_cast<T>(slope);
    switch (act) {
      case Act::relu:
        // Both loads unconditional: a select, which vectorises, instead of a guarded load.
        map_elements(n, kCheapCost, [&](int64_t i) {
          const T g = pdy[i];
          pdx[i] = py[i] > T(0) ? g : T(0);
        });
        break;
      case Act::leaky_relu:
        map_elements(n, kCheapCost,
                     [&](int64_t i) { pdx[i] = py[i] > T(0) ? pdy[i] : s * pdy[i]; });
        break;
      case Act::sigmoid:
        map_elements(n, kCheapCost, [&](int64_t i) { pdx[i] = pdy[i] * py[i] * (T(1) - py[i]); });
        break;
      case Act::tanh:
        map_elements(n, kCheapCost, [&](int64_t i) { pdx[i] = pdy[i] * (T(1) - py[i] * py[i]); });
        break;
    }
  });
}

void add_blocks_relu_forward(const Tensor& y, const Tensor& src) {
  const int64_t block = src.numel();
  visit_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* py = y.data<T>();
    const T* DB_RESTRICT ps = src.data<T>();
    for (int64_t b = 0; b < y.numel(); b += block) {
      T* DB_RESTRICT pb = py + b;
      map_elements(block, kCheapCost, [&](int64_t i) {
        const T v = pb[i] + ps[i];
        pb[i] = v > T(0) ? v : T(0);
      });
    }
  });
}

// Per element of dsrc the blocks are added in order 0, 1, ..., as copy + axpy did.
void add_blocks_relu_backward(const Tensor& dsrc, const Tensor& dy, const Tensor& y) {
  const int64_t block = dsrc.numel(), blocks = y.numel() / block;
  visit_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* DB_RESTRICT pdy = dy.data<T>();
    const T* DB_RESTRICT py = y.data<T>();
    T* DB_RESTRICT pds = dsrc.data<T>();
    map_elements(block, kCheapCost * blocks, [&](int64_t i) {
      T sum = T(0);
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t j = b * block + i;
        const T g = py[j] > T(0) ? pdy[j] : T(0);
        pdy[j] = g;
        sum = b == 0 ? g : sum + g;
      }
      pds[i] = sum;
    });
  });
}

void dropout_forward(const Tensor& y, const Tensor& keep, const Tensor& x, double p,
                     const RngKey& key, const DropoutRows& rows_of) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const int64_t width = x.row_size();
  const int64_t rows = n / width;
  uint8_t* pk = keep.data<uint8_t>();
  const int64_t* ids = rows_of.keyed() ? rows_of.ids.data<int64_t>() : nullptr;
  const uint64_t first_row = rows_of.first;
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T inv_keep = static_cast<T>(1.0 / (1.0 - p));
    parallel_for(rows, width * kPhiloxCost, [&](int64_t begin, int64_t end) {
      uint32_t bits[kDrawBlock];
      for (int64_t r = begin; r < end; ++r) {
        const uint64_t counter =
            ids != nullptr ? static_cast<uint64_t>(ids[r]) : first_row + static_cast<uint64_t>(r);
        for (int64_t c0 = 0; c0 < width; c0 += kDrawBlock) {
          const int64_t len = std::min(kDrawBlock, width - c0);
          // The draws of a block of columns first: independent, so they vectorise.
#pragma omp simd
          for (int64_t j = 0; j < len; ++j)
            bits[j] = philox_u32(key, counter, static_cast<uint32_t>(c0 + j));
          const int64_t e0 = r * width + c0;
#pragma omp simd
          for (int64_t j = 0; j < len; ++j) {
            // Compared in double so that the threshold is exactly p, as documented (every
            // draw is >= 0, so p == 0 keeps everything).
            const bool kept = static_cast<double>(uniform_float(bits[j])) >= p;
            pk[e0 + j] = kept ? 1 : 0;
            py[e0 + j] = kept ? px[e0 + j] * inv_keep : T(0);
          }
        }
      }
    });
  });
}

void dropout_backward(const Tensor& dx, const Tensor& dy, const Tensor& keep, double p) {
  const int64_t n = dy.numel();
  const uint8_t* pk = keep.data<uint8_t>();
  visit_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    const T inv_keep = static_cast<T>(1.0 / (1.0 - p));
    map_elements(n, kCheapCost, [&](int64_t i) { pdx[i] = pk[i] != 0 ? pdy[i] * inv_keep : T(0); });
  });
}

void fill(const Tensor& x, double value) {
  visit_any(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* px = x.data<T>();
    const T v = static_cast<T>(value);
    map_elements(x.numel(), kCheapCost, [&](int64_t i) { px[i] = v; });
  });
}

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.raw() == src.raw()) return;
  // Copied in 64 KiB pieces so that large copies use every thread's memory bandwidth.
  constexpr int64_t kPiece = int64_t{1} << 16;
  const int64_t bytes = static_cast<int64_t>(src.bytes());
  auto* d = static_cast<char*>(dst.raw());
  const auto* s = static_cast<const char*>(src.raw());
  parallel_for((bytes + kPiece - 1) / kPiece, kPiece / 8, [&](int64_t begin, int64_t end) {
    const int64_t lo = begin * kPiece, hi = std::min(bytes, end * kPiece);
    std::memcpy(d + lo, s + lo, static_cast<size_t>(hi - lo));
  });
}

void axpy(const Tensor& y, double alpha, const Tensor& x) {
  visit_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* DB_RESTRICT py = y.data<T>();
    const T* DB_RESTRICT px = x.data<T>();
    const T a = static_cast<T>(alpha);
    map_elements(y.numel(), kCheapCost, [&](int64_t i) { py[i] += a * px[i]; });
  });
}

void scale(const Tensor& x, double alpha) {
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* px = x.data<T>();
    const T a = static_cast<T>(alpha);
    map_elements(x.numel(), kCheapCost, [&](int64_t i) { px[i] *= a; });
  });
}

void mul(const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_float(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    // No restrict: out may alias a or b (each element is read before it is written).
    T* po = out.data<T>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    map_elements(out.numel(), kCheapCost, [&](int64_t i) { po[i] = pa[i] * pb[i]; });
  });
}

void sub(const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_float(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    // No restrict: out may alias a or b (each element is read before it is written).
    T* po = out.data<T>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    map_elements(out.numel(), kCheapCost, [&](int64_t i) { po[i] = pa[i] - pb[i]; });
  });
}

void scale_rows(const Tensor& out, const Tensor& x, const Tensor& weight) {
  const int64_t rows = x.dim(0), cols = x.dim(1);
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    // No restrict: out may alias x.
    T* po = out.data<T>();
    const T* px = x.data<T>();
    const T* pw = weight.data<T>();
    parallel_for(rows, cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T w = pw[r];
        for (int64_t c = 0; c < cols; ++c) po[r * cols + c] = px[r * cols + c] * w;
      }
    });
  });
}

void sum(const Tensor& out, const Tensor& x) {
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const double total = fixed_order_sum(x.numel(), kCheapCost,
                                         [&](int64_t i) { return static_cast<double>(px[i]); });
    *out.data<T>() = static_cast<T>(total);
  });
}

void sum_squares(const Tensor& out, const Tensor& x) {
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const double total = fixed_order_sum(x.numel(), kCheapCost, [&](int64_t i) {
      const double v = static_cast<double>(px[i]);
      return v * v;
    });
    *out.data<T>() = static_cast<T>(total);
  });
}

}  // namespace depbloom::ops::cpu
