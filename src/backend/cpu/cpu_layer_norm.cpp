// CPU layer norm over the last dimension: forward row by row (statistics in double, saved
// as mean and 1/std), backward with dx per row and dgamma/dbeta as fixed-order column sums.
#include <cmath>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"

namespace depbloom::ops::cpu {

void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, double eps) {
  const int64_t rows = x.dim(0), dims = x.dim(1);
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const T* DB_RESTRICT pgamma = gamma.data<T>();
    const T* DB_RESTRICT pbeta = beta.data<T>();
    T* py = y.data<T>();
    T* pmean = mean.data<T>();
    T* prstd = rstd.data<T>();
    parallel_for(rows, dims * 6, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* xr = px + i * dims;  // y may alias x
        T* yr = py + i * dims;
        double total = 0.0;
#pragma omp simd reduction(+ : total)
        for (int64_t j = 0; j < dims; ++j) total += static_cast<double>(xr[j]);
        const double mu = dims > 0 ? total / static_cast<double>(dims) : 0.0;
        // Two passes: the variance of the centred values does not cancel catastrophically.
        double squares = 0.0;
#pragma omp simd reduction(+ : squares)
        for (int64_t j = 0; j < dims; ++j) {
          const double c = static_cast<double>(xr[j]) - mu;
          squares += c * c;
        }
        const double var = dims > 0 ? squares / static_cast<double>(dims) : 0.0;
        const double inv_std = 1.0 / std::sqrt(var + eps);
        pmean[i] = static_cast<T>(mu);
        prstd[i] = static_cast<T>(inv_std);
        const T m = static_cast<T>(mu), s = static_cast<T>(inv_std);
#pragma omp simd
        for (int64_t j = 0; j < dims; ++j) yr[j] = (xr[j] - m) * s * pgamma[j] + pbeta[j];
      }
    });
  });
}

void layer_norm_backward(const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& gamma) {
  const int64_t rows = x.dim(0), dims = x.dim(1);
  visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    const T* pmean = mean.data<T>();
    const T* prstd = rstd.data<T>();
    const T* DB_RESTRICT pgamma = gamma.data<T>();
    T* pdx = dx.data<T>();
    // The parameter gradients first: dx may alias dy.
    fixed_order_column_sums<2>(
        rows, dims, 4,
        [&](int64_t i, int64_t j0, int64_t j1, double* DB_RESTRICT acc) {
          const T* DB_RESTRICT xr = px + i * dims;
          const T* DB_RESTRICT g = pdy + i * dims;
          const T m = pmean[i], s = prstd[i];
          for (int64_t j = j0; j < j1; ++j) {
            acc[j - j0] += static_cast<double>(g[j] * (xr[j] - m) * s);
            acc[kColumnTile + (j - j0)] += static_cast<double>(g[j]);
          }
        },
        [&](int64_t j0, int64_t j1, const double* totals) {
          T* pdgamma = dgamma.data<T>();
          T* pdbeta = dbeta.data<T>();
          for (int64_t j = j0; j < j1; ++j) {
            pdgamma[j] += static_cast<T>(totals[j - j0]);
            pdbeta[j] += static_cast<T>(totals[kColumnTile + (j - j0)]);
          }
        });
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma.
    parallel_for(rows, dims * 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* DB_RESTRICT xr = px + i * dims;
        const T* g = pdy + i * dims;
        T* dxr = pdx + i * dims;
        const T m = pmean[i], s = prstd[i];
        double sum_g = 0.0, sum_gx = 0.0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
        for (int64_t j = 0; j < dims; ++j) {
          const double gj = static_cast<double>(g[j] * pgamma[j]);
          sum_g += gj;
          sum_gx += gj * static_cast<double>((xr[j] - m) * s);
        }
        const T mean_g = static_cast<T>(sum_g / static_cast<double>(dims));
        const T mean_gx = static_cast<T>(sum_gx / static_cast<double>(dims));
        for (int64_t j = 0; j < dims; ++j) {
          const T xhat = (xr[j] - m) * s;
          dxr[j] = s * (g[j] * pgamma[j] - mean_g - xhat * mean_gx);
        }
      }
    });
  });
}

}  // namespace depbloom::ops::cpu
