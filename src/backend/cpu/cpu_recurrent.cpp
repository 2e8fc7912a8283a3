// CPU fused recurrent cells (GRU with PyTorch's gate order r, z, n; vanilla tanh RNN) and
// the cosine time encoding. Each cell is one pass over its rows: all gates of a row are
// computed, saved and combined while the row is in cache.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backend/cpu/cpu_math.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/fast_trig.h"

namespace depbloom::ops::cpu {
namespace {

// Flops of one hidden unit of a GRU row (three exponentials dominate), for the threshold.
constexpr int64_t kGruUnitCost = 60;

}  // namespace

void gru_cell_forward(const Tensor& h_new, const Tensor& gates, const Tensor& gx, const Tensor& gh,
                      const Tensor& h) {
  const int64_t rows = h.dim(0), hidden = h.dim(1);
  visit_float(h.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pgx = gx.data<T>();
    const T* pgh = gh.data<T>();
    const T* ph = h.data<T>();
    T* pout = h_new.data<T>();
    T* pgates = gates.data<T>();
    parallel_for(rows, hidden * kGruUnitCost, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const T* DB_RESTRICT x3 = pgx + b * 3 * hidden;
        const T* DB_RESTRICT h3 = pgh + b * 3 * hidden;
        const T* DB_RESTRICT hb = ph + b * hidden;
        T* DB_RESTRICT g4 = pgates + b * 4 * hidden;
        T* DB_RESTRICT out = pout + b * hidden;
#pragma omp simd
        for (int64_t j = 0; j < hidden; ++j) {
          const T r = sigmoid_fast(x3[j] + h3[j]);
          const T z = sigmoid_fast(x3[hidden + j] + h3[hidden + j]);
          const T gh_n = h3[2 * hidden + j];
          const T n = tanh_fast(x3[2 * hidden + j] + r * gh_n);
          g4[j] = r;
          g4[hidden + j] = z;
          g4[2 * hidden + j] = n;
          g4[3 * hidden + j] = gh_n;
          out[j] = (T(1) - z) * n + z * hb[j];
        }
      }
    });
  });
}

void gru_cell_backward(const Tensor& d_gx, const Tensor& d_gh, const Tensor& dh,
                       const Tensor& dh_new, const Tensor& gates, const Tensor& h) {
  const int64_t rows = h.dim(0), hidden = h.dim(1);
  visit_float(h.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdout = dh_new.data<T>();
    const T* pgates = gates.data<T>();
    const T* ph = h.data<T>();
    T* pdgx = d_gx.data<T>();
    T* pdgh = d_gh.data<T>();
    T* pdh = dh.data<T>();
    parallel_for(rows, hidden * 20, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const T* DB_RESTRICT g4 = pgates + b * 4 * hidden;
        const T* DB_RESTRICT dout = pdout + b * hidden;
        const T* DB_RESTRICT hb = ph + b * hidden;
        T* DB_RESTRICT dx3 = pdgx + b * 3 * hidden;
        T* DB_RESTRICT dh3 = pdgh + b * 3 * hidden;
        T* DB_RESTRICT dhb = pdh + b * hidden;
#pragma omp simd
        for (int64_t j = 0; j < hidden; ++j) {
          const T r = g4[j], z = g4[hidden + j], n = g4[2 * hidden + j];
          const T gh_n = g4[3 * hidden + j];
          const T g = dout[j];
          // h_new = (1 - z) n + z h
          const T dn_pre = g * (T(1) - z) * (T(1) - n * n);
          const T dz_pre = g * (hb[j] - n) * z * (T(1) - z);
          const T dr_pre = dn_pre * gh_n * r * (T(1) - r);
          dx3[j] = dr_pre;
          dx3[hidden + j] = dz_pre;
          dx3[2 * hidden + j] = dn_pre;
          dh3[j] = dr_pre;
          dh3[hidden + j] = dz_pre;
          dh3[2 * hidden + j] = dn_pre * r;  // n's pre-activation holds r * gh_n
          dhb[j] = g * z;
        }
      }
    });
  });
}

void rnn_cell_forward(const Tensor& h_new, const Tensor& gx, const Tensor& gh) {
  const int64_t n = gx.numel();
  visit_float(gx.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pgx = gx.data<T>();
    const T* pgh = gh.data<T>();
    T* pout = h_new.data<T>();
    parallel_for(n, 20, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) pout[i] = tanh_fast(pgx[i] + pgh[i]);
    });
  });
}

void rnn_cell_backward(const Tensor& d_pre, const Tensor& dh_new, const Tensor& h_new) {
  const int64_t n = h_new.numel();
  visit_float(h_new.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdout = dh_new.data<T>();
    const T* pout = h_new.data<T>();
    T* pd = d_pre.data<T>();
    parallel_for(n, 2, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) pd[i] = pdout[i] * (T(1) - pout[i] * pout[i]);
    });
  });
}

namespace {

// One row of the encoding, row[j] = cos(t w[j] + b[j]): time_encode_forward's and
// concat_cols_time_encode's, so the two give the same bits.
template <class T>
inline void encode_row(T* DB_RESTRICT row, T t, const T* DB_RESTRICT w, const T* DB_RESTRICT b,
                       int64_t dims) {
  if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
    for (int64_t j = 0; j < dims; ++j) row[j] = fast_cos(t * w[j] + b[j]);
  } else {
    for (int64_t j = 0; j < dims; ++j) row[j] = std::cos(t * w[j] + b[j]);
  }
}

}  // namespace

void time_encode_forward(const Tensor& out, const Tensor& dt, const Tensor& w, const Tensor& b) {
  const int64_t rows = out.dim(0), dims = out.dim(1);
  visit_float(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pdt = dt.data<T>(), *pw = w.data<T>(), *pb = b.data<T>();
    T* pout = out.data<T>();
    parallel_for(rows, dims * 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) encode_row(pout + i * dims, pdt[i], pw, pb, dims);
    });
  });
}

void concat_cols_time_encode(const Tensor& out, std::initializer_list<Tensor> parts,
                             const Tensor& dt, const Tensor& w, const Tensor& b) {
  const int64_t rows = out.dim(0), total = out.dim(1), dims = w.numel();
  visit_float(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdt = dt.raw() == nullptr ? nullptr : dt.data<T>();
    const T *pw = w.data<T>(), *pb = b.data<T>();
    T* pout = out.data<T>();
    parallel_for(rows, total + dims * 20, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        T* row = pout + r * total;
        for (const Tensor& part : parts) {
          const int64_t width = part.rank() == 1 ? 1 : part.dim(1);
          if (width > 0)  // a part of width 0 may have no storage
            std::memcpy(row, part.data<T>() + r * width, static_cast<size_t>(width) * sizeof(T));
          row += width;
        }
        encode_row(row, pdt == nullptr ? T(0) : pdt[r], pw, pb, dims);
      }
    });
  });
}

void time_encode_backward(const Tensor& dw, const Tensor& db, const Tensor& dout, const Tensor& dt,
                          const Tensor& w, const Tensor& b) {
  const int64_t rows = dout.dim(0), dims = dout.dim(1);
  visit_float(dout.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdout = dout.data<T>();
    const T* pdt = dt.raw() == nullptr ? nullptr : dt.data<T>();  // Tensor{}: zero deltas
    const int64_t dt_rows = pdt == nullptr ? 0 : dt.numel();      // past them: zero deltas too
    const T* pw = w.data<T>();
    const T* pb = b.data<T>();
    T* pdw = dw.data<T>();
    T* pdb = db.data<T>();
    // d/db = -sin(dt w + b) dout, d/dw = that times dt; summed over rows in a fixed order.
    fixed_order_column_sums<2>(
        rows, dims, 20,
        [&](int64_t i, int64_t j0, int64_t j1, double* DB_RESTRICT acc) {
          const T t = i < dt_rows ? pdt[i] : T(0);
          const T* DB_RESTRICT g = pdout + i * dims;
          if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
            for (int64_t j = j0; j < j1; ++j) {
              const double d_pre = -static_cast<double>(fast_sin(t * pw[j] + pb[j]) * g[j]);
              acc[j - j0] += d_pre * static_cast<double>(t);
              acc[kColumnTile + (j - j0)] += d_pre;
            }
          } else {
            for (int64_t j = j0; j < j1; ++j) {
              const double d_pre = -static_cast<double>(std::sin(t * pw[j] + pb[j]) * g[j]);
              acc[j - j0] += d_pre * static_cast<double>(t);
              acc[kColumnTile + (j - j0)] += d_pre;
            }
          }
        },
        [&](int64_t j0, int64_t j1, const double* totals) {
          for (int64_t j = j0; j < j1; ++j) {
            pdw[j] += static_cast<T>(totals[j - j0]);
            pdb[j] += static_cast<T>(totals[kColumnTile + (j - j0)]);
          }
        });
  });
}

}  // namespace depbloom::ops::cpu
