// CPU gemm and gemm_bias through OpenBLAS (row-major cblas), and the bias ops beside them.
// Large products are cut into a grid of C tiles fixed by the shape alone, handed to the
// OpenMP threads one at a time, each a single-threaded OpenBLAS call: the bits then depend
// neither on the thread count nor on which thread took a tile, and OpenBLAS's own threaded
// driver (which mallocs per call) is never entered. Products with a small C and a long
// inner dimension (weight gradients over a batch) are cut along k instead, into partial
// products summed in a fixed order.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"

namespace depbloom::ops::cpu {
namespace {

CBLAS_TRANSPOSE cblas_trans(Trans t) {
  return t == Trans::N ? CblasNoTrans : CblasTrans;
}

// One row-major product on raw pointers; ld* are the stored row lengths.
struct GemmShape {
  int64_t m, n, k, lda, ldb, ldc;
};

blasint ld(int64_t x) {
  return static_cast<blasint>(std::max<int64_t>(1, x));
}

void gemm_call(const GemmShape& s, Trans ta, Trans tb, double alpha, const float* a, const float* b,
               double beta, float* c) {
  cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(s.m),
              static_cast<blasint>(s.n), static_cast<blasint>(s.k), static_cast<float>(alpha), a,
              ld(s.lda), b, ld(s.ldb), static_cast<float>(beta), c, ld(s.ldc));
}

void gemm_call(const GemmShape& s, Trans ta, Trans tb, double alpha, const double* a,
               const double* b, double beta, double* c) {
  cblas_dgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(s.m),
              static_cast<blasint>(s.n), static_cast<blasint>(s.k), alpha, a, ld(s.lda), b,
              ld(s.ldb), beta, c, ld(s.ldc));
}

// OpenBLAS runs a product single-threaded when m*n*k is at most 65536 * 4 (its
// SMP_THRESHOLD_MIN times GEMM_MULTITHREAD_THRESHOLD); such products are called directly.
constexpr double kOpenBlasSerialVolume = 65536.0 * 4.0;
// Tiles aim at this count whatever the thread count (results must not depend on it),
// with sides of at least kMinTileSide: each tile re-packs its A and B panels
// (k * (rows + cols) elements) and OpenBLAS loses speed on narrow tiles (measured: a
// 300 x 200 x 20000 A^T B runs at half speed in 80 x 80 tiles, near full in 160 x 200).
constexpr int64_t kTargetTiles = 16;
constexpr int64_t kMinTileSide = 128;
constexpr int64_t kTileAlign = 16;  // tile sides are multiples of this

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

// The tile grid over C [m, n], from the shape alone (never from the thread count).
struct TileGrid {
  int64_t rows_per_tile, cols_per_tile, row_tiles, col_tiles;
};
TileGrid tile_grid(const GemmShape& s, int64_t min_side) {
  // Rows first: a row tile reads only its own rows of A. Columns when rows run out.
  TileGrid g;
  g.row_tiles = std::clamp<int64_t>(s.m / min_side, 1, kTargetTiles);
  g.rows_per_tile = round_up(ceil_div(s.m, g.row_tiles), kTileAlign);
  g.row_tiles = ceil_div(s.m, g.rows_per_tile);
  g.col_tiles = std::clamp<int64_t>(s.n / min_side, 1, ceil_div(kTargetTiles, g.row_tiles));
  g.cols_per_tile = round_up(ceil_div(s.n, g.col_tiles), kTileAlign);
  g.col_tiles = ceil_div(s.n, g.cols_per_tile);
  return g;
}

// A product whose k is long beside its C [m, n] (a weight gradient over a batch) is cut
// along k into kSplitChunks partial products: each chunk packs its slice of a and b once,
// where each C tile would re-pack all of k, and 4 chunks share 2 threads evenly where 3
// tiles do not. Measured, 2 cores: a 200 x 200 x 18000 A^T B runs at 140 GFLOP/s in 4
// k-chunks, at 70 in a 3 x 3 grid of 80 x 80 tiles; a 400 x 100 x 18000 at 166 against
// 112 in 3 row tiles; 300 x 300 x 3600 at 187 against 119 in 2 x 2 tiles.
constexpr int64_t kSplitMinK = 1024;
constexpr int64_t kSplitChunks = 4;
constexpr int64_t kSplitMaxC = 512 * 512;  // bounds the partial products' scratch

// How gemm runs a product: whole in one OpenBLAS call (small enough that OpenBLAS would
// not thread it), cut along k, or in C tiles. affine_grad asks too, to sum the bias
// gradient inside the k chunks.
enum class GemmRoute { whole, split_k, tiles };
GemmRoute gemm_route(const GemmShape& s) {
  if (static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) <=
      kOpenBlasSerialVolume)
    return GemmRoute::whole;
  if (s.k < kSplitMinK || s.m * s.n > kSplitMaxC) return GemmRoute::tiles;
  const TileGrid g = tile_grid(s, kMinTileSide);
  const bool split = g.row_tiles * g.col_tiles < 2 || s.k >= 4 * std::max(s.m, s.n);
  return split ? GemmRoute::split_k : GemmRoute::tiles;
}

// Each of rows [0, m) of c (ldc apart) becomes bias [0, n): a gemm_bias tile's start, onto
// which the product then accumulates (beta 1).
template <class T>
void start_from_bias(T* c, int64_t m, int64_t n, int64_t ldc, const T* DB_RESTRICT bias) {
  for (int64_t i = 0; i < m; ++i) std::copy_n(bias, n, c + i * ldc);
}

// sums [n] = the column sums of rows [0, rows) of x (ld apart), in double.
template <class T>
void sum_rows(double* DB_RESTRICT sums, const T* x, int64_t rows, int64_t n, int64_t ld) {
  std::fill_n(sums, n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* DB_RESTRICT row = x + r * ld;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) sums[i] += static_cast<double>(row[i]);
  }
}

// c = alpha sum_j op(a_j) op(b_j) + beta c over kSplitChunks ranges j of k, each a
// single-threaded product into scratch; the partial sums are added in chunk order, so the
// bits do not depend on the thread count. The scratch is per thread and only grows (at
// most kSplitChunks * kSplitMaxC elements): a warm step allocates nothing.
// With a bias, c = sum + bias instead (gemm_bias's beta is 0).
// With row_sums (affine_grad: a stored transposed, [k, m]), each chunk also sums its rows of
// a while they are in cache, and row_sums [m] += the chunks' sums in chunk order.
template <class T>
void gemm_split_k(const GemmShape& s, Trans ta, Trans tb, double alpha, const T* a, const T* b,
                  double beta, T* c, const T* bias, T* row_sums = nullptr) {
  static thread_local std::vector<T> scratch;
  static thread_local std::vector<double> sums;
  const int64_t mn = s.m * s.n;
  if (scratch.size() < static_cast<size_t>(kSplitChunks * mn))
    scratch.resize(static_cast<size_t>(kSplitChunks * mn));
  if (row_sums != nullptr && sums.size() < static_cast<size_t>(kSplitChunks * s.m))
    sums.resize(static_cast<size_t>(kSplitChunks * s.m));
  T* partial = scratch.data();
  double* chunk_sums = sums.data();
  split_across_threads(kSplitChunks, Ranges::one_per_item, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t k0 = s.k * j / kSplitChunks, k1 = s.k * (j + 1) / kSplitChunks;
      GemmShape part = s;
      part.k = k1 - k0;
      part.ldc = s.n;
      // Columns k0.. of op(a) are columns of a, or rows when a is stored transposed;
      // likewise rows k0.. of op(b).
      const T* a_part = ta == Trans::N ? a + k0 : a + k0 * s.lda;
      const T* b_part = tb == Trans::N ? b + k0 * s.ldb : b + k0;
      gemm_call(part, ta, tb, 1.0, a_part, b_part, 0.0, partial + j * mn);
      if (row_sums != nullptr) sum_rows(chunk_sums + j * s.m, a_part, part.k, s.m, s.lda);
    }
  });
  if (row_sums != nullptr) {
    for (int64_t i = 0; i < s.m; ++i) {
      double total = 0.0;
      for (int64_t j = 0; j < kSplitChunks; ++j) total += chunk_sums[j * s.m + i];
      row_sums[i] += static_cast<T>(total);
    }
  }
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  parallel_for(s.m, s.n * kSplitChunks, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T* row = c + i * s.ldc;
      for (int64_t col = 0; col < s.n; ++col) {
        T sum = 0;
        for (int64_t j = 0; j < kSplitChunks; ++j) sum += partial[j * mn + i * s.n + col];
        // beta == 0 overwrites, as BLAS does (a NaN in c is dropped).
        if (bias != nullptr)
          row[col] = al * sum + bias[col];
        else
          row[col] = beta == 0.0 ? al * sum : al * sum + be * row[col];
      }
    }
  });
}

// c = alpha op(a) op(b) + beta c for one matrix, tiled over C when OpenBLAS would thread.
// With a bias [n] (gemm_bias: alpha 1, beta 0) each tile of c starts as the bias while it is
// in cache and the product accumulates onto it: c = op(a) op(b) + bias, with no pass of its
// own and none of BLAS's beta = 0 clearing.
template <class T>
void gemm_matrix(const GemmShape& s, Trans ta, Trans tb, double alpha, const T* a, const T* b,
                 double beta, T* c, const T* bias = nullptr) {
  const GemmRoute route = gemm_route(s);
  if (route == GemmRoute::whole) {
    if (bias != nullptr) start_from_bias(c, s.m, s.n, s.ldc, bias);
    gemm_call(s, ta, tb, alpha, a, b, bias != nullptr ? 1.0 : beta, c);
    return;
  }
  if (route == GemmRoute::split_k) return gemm_split_k(s, ta, tb, alpha, a, b, beta, c, bias);
  TileGrid g = tile_grid(s, kMinTileSide);
  // Small m and n with a short k: smaller tiles rather than one thread.
  if (g.row_tiles * g.col_tiles < 2) g = tile_grid(s, kMinTileSide / 2);
  // Always inside an OpenMP region (or with one thread): OpenBLAS then stays
  // single-threaded, even for a grid of one tile.
  split_across_threads(
      g.row_tiles * g.col_tiles, Ranges::one_per_item, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i0 = (t / g.col_tiles) * g.rows_per_tile;
          const int64_t j0 = (t % g.col_tiles) * g.cols_per_tile;
          GemmShape tile = s;
          tile.m = std::min(g.rows_per_tile, s.m - i0);
          tile.n = std::min(g.cols_per_tile, s.n - j0);
          // Rows i0.. of op(a): rows of a, or columns when a is stored transposed; likewise
          // columns j0.. of op(b).
          const T* a_tile = ta == Trans::N ? a + i0 * s.lda : a + i0;
          const T* b_tile = tb == Trans::N ? b + j0 : b + j0 * s.ldb;
          T* c_tile = c + i0 * s.ldc + j0;
          if (bias != nullptr) start_from_bias(c_tile, tile.m, tile.n, s.ldc, bias + j0);
          gemm_call(tile, ta, tb, alpha, a_tile, b_tile, bias != nullptr ? 1.0 : beta, c_tile);
        }
      });
}

// With an empty inner dimension the product is 0 and c = beta * c over rows [0, m) of
// length n, ldc apart; BLAS would reject the zero leading dimensions, so it is done here.
// beta == 0 overwrites (NaN in c is dropped).
template <class T>
void scale_output(T* c, int64_t m, int64_t n, int64_t ldc, double beta) {
  const T b = static_cast<T>(beta);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0 ? T(0) : c[i * ldc + j] * b;
}

// Shape of one gemm; `first` is 1 when a leading batch dimension precedes the matrices.
GemmShape gemm_shape(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, int first) {
  GemmShape s;
  s.m = c.dim(first);
  s.n = c.dim(first + 1);
  s.k = ta == Trans::N ? a.dim(first + 1) : a.dim(first);
  // A 2-D operand may be a column window: its row stride is the leading dimension.
  s.lda = first == 0 ? a.row_stride() : a.dim(first + 1);
  s.ldb = first == 0 ? b.row_stride() : b.dim(first + 1);
  s.ldc = first == 0 ? c.row_stride() : s.n;
  return s;
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb, double alpha,
          double beta) {
  const GemmShape s = gemm_shape(c, a, ta, b, 0);
  if (s.m == 0 || s.n == 0) return;
  visit_float(c.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (s.k == 0) return scale_output(c.data<T>(), s.m, s.n, s.ldc, beta);
    gemm_matrix(s, ta, tb, alpha, a.data<T>(), b.data<T>(), beta, c.data<T>());
  });
}

void gemm_bias(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
               const Tensor& bias) {
  const GemmShape s = gemm_shape(c, a, ta, b, 0);
  if (s.m == 0 || s.n == 0) return;
  visit_float(c.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pb = bias.data<T>();
    if (s.k == 0) return start_from_bias(c.data<T>(), s.m, s.n, s.ldc, pb);
    gemm_matrix(s, ta, tb, 1.0, a.data<T>(), b.data<T>(), 0.0, c.data<T>(), pb);
  });
}

// dw += dy^T x and db += column sums of dy. Where gemm would cut the product along k (the
// usual weight gradient over a long batch), each k-chunk sums its rows of dy right after
// its product reads them; otherwise the product, then bias_grad's pass.
void affine_grad(const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x) {
  const GemmShape s = gemm_shape(dw, dy, Trans::T, x, 0);
  if (s.m == 0 || s.n == 0 || s.k == 0) return;
  const bool split = gemm_route(s) == GemmRoute::split_k;
  visit_float(dw.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (split)
      return gemm_split_k(s, Trans::T, Trans::N, 1.0, dy.data<T>(), x.data<T>(), 1.0, dw.data<T>(),
                          static_cast<const T*>(nullptr), db.data<T>());
    gemm_matrix(s, Trans::T, Trans::N, 1.0, dy.data<T>(), x.data<T>(), 1.0, dw.data<T>());
    bias_grad(db, dy);
  });
}

void gemm_batched(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
                  double alpha, double beta) {
  const GemmShape s = gemm_shape(c, a, ta, b, 1);
  const int64_t batch = c.dim(0);
  if (batch == 0 || s.m == 0 || s.n == 0) return;
  const int64_t a_stride = a.dim(1) * a.dim(2), b_stride = b.dim(1) * b.dim(2);
  const int64_t c_stride = s.m * s.n;
  visit_float(c.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.data<T>();
    if (s.k == 0) return scale_output(pc, batch * s.m, s.n, s.n, beta);
    const double volume =
        static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    if (volume > kOpenBlasSerialVolume) {
      // Large matrices: one after another, each tiled across the threads.
      for (int64_t i = 0; i < batch; ++i)
        gemm_matrix(s, ta, tb, alpha, pa + i * a_stride, pb + i * b_stride, beta,
                    pc + i * c_stride);
      return;
    }
    // Small ones (which OpenBLAS never threads): whole matrices, one thread each.
    parallel_for(batch, static_cast<int64_t>(2.0 * volume), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        gemm_call(s, ta, tb, alpha, pa + i * a_stride, pb + i * b_stride, beta, pc + i * c_stride);
    });
  });
}

void bias_add(const Tensor& y, const Tensor& bias) {
  const int64_t cols = bias.numel();
  if (cols == 0 || y.numel() == 0) return;
  const int64_t rows = y.numel() / cols;
  visit_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* py = y.data<T>();
    const T* DB_RESTRICT pb = bias.data<T>();
    parallel_for(rows, cols, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T* DB_RESTRICT row = py + i * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) row[j] += pb[j];
      }
    });
  });
}

void bias_grad(const Tensor& dbias, const Tensor& dy) {
  const int64_t cols = dbias.numel();
  if (cols == 0 || dy.numel() == 0) return;
  const int64_t rows = dy.numel() / cols;
  visit_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pdy = dy.data<T>();
    T* pdb = dbias.data<T>();
    fixed_order_column_sums<1>(
        rows, cols, 1,
        [&](int64_t i, int64_t j0, int64_t j1, double* DB_RESTRICT acc) {
          const T* DB_RESTRICT row = pdy + i * cols + j0;
#pragma omp simd
          for (int64_t j = 0; j < j1 - j0; ++j) acc[j] += static_cast<double>(row[j]);
        },
        [&](int64_t j0, int64_t j1, const double* totals) {
          for (int64_t j = j0; j < j1; ++j) pdb[j] += static_cast<T>(totals[j - j0]);
        });
  });
}

}  // namespace depbloom::ops::cpu
