// CUDA GEMMs through cuBLAS (float only). cuBLAS is column-major and our tensors are
// row-major: a row-major [M,N] matrix is the column-major [N,M] matrix of its transpose,
// so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands swapped.
#include <climits>

#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_ops.h"
#include "depbloom/core/cuda_check.h"
#include "elementwise.cuh"

namespace depbloom::ops::cuda {
namespace {

// One (possibly batched) row-major SGEMM: c [batch, m, n] = alpha op(a) op(b) + beta c.
// lda, ldb, ldc are the row strides of a, b and c as stored (a column window's are longer
// than its rows); strides are elements per batch.
struct GemmCall {
  int64_t batch, m, n, k;
  const float* a;
  int64_t lda, stride_a;
  Trans ta;
  const float* b;
  int64_t ldb, stride_b;
  Trans tb;
  float* c;
  int64_t ldc, stride_c;
  float alpha, beta;
};

void row_major_sgemm(int device, const GemmCall& g) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    // Empty inner dimension: C = beta C. BLAS never reads C when beta is 0 (NaN stays out).
    cudaStream_t stream = backend::enter_device(device);
    if (g.beta == 1.0f) return;
    // Packed rows in one launch; a column window's rows one by one (a rare, tiny case).
    const bool packed = g.ldc == g.n;
    const int64_t runs = packed ? 1 : g.batch * g.m, count = packed ? g.batch * g.m * g.n : g.n;
    for (int64_t r = 0; r < runs; ++r) {
      float* row = g.c + r * g.ldc;
      DB_CHECK_CUDA(g.beta == 0.0f ? kernels::fill(row, count, 0.0f, stream)
                                   : kernels::scale(row, g.beta, count, stream));
    }
    return;
  }
  DB_ASSERT(g.m <= INT_MAX && g.n <= INT_MAX && g.k <= INT_MAX && g.batch <= INT_MAX &&
                g.lda <= INT_MAX && g.ldb <= INT_MAX && g.ldc <= INT_MAX,
            "gemm dimensions exceed cuBLAS's int range: batch {} m {} n {} k {}", g.batch, g.m, g.n,
            g.k);
  cublasHandle_t handle = backend::cublas_handle(device);
  // Row-major A stored [M,K] (N) is column-major A^T with ld K: op_A^T needs no transpose;
  // stored [K,M] (T) is column-major A with ld M: transpose it. Same for B.
  const cublasOperation_t op_a = g.ta == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_b = g.tb == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T;
  const auto m = static_cast<int>(g.m);
  const auto n = static_cast<int>(g.n);
  const auto k = static_cast<int>(g.k);
  const auto lda = static_cast<int>(g.lda);
  const auto ldb = static_cast<int>(g.ldb);
  const auto ldc = static_cast<int>(g.ldc);
  if (g.batch == 1) {
    DB_CHECK_CUBLAS(
        cublasSgemm(handle, op_b, op_a, n, m, k, &g.alpha, g.b, ldb, g.a, lda, &g.beta, g.c, ldc));
  } else {
    DB_CHECK_CUBLAS(cublasSgemmStridedBatched(handle, op_b, op_a, n, m, k, &g.alpha, g.b, ldb,
                                              g.stride_b, g.a, lda, g.stride_a, &g.beta, g.c, ldc,
                                              g.stride_c, static_cast<int>(g.batch)));
  }
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb, double alpha,
          double beta) {
  GemmCall g{};
  g.batch = 1;
  g.m = c.dim(0);
  g.n = c.dim(1);
  g.k = ta == Trans::N ? a.dim(1) : a.dim(0);
  g.a = a.data<float>();
  g.lda = a.row_stride();
  g.ta = ta;
  g.b = b.data<float>();
  g.ldb = b.row_stride();
  g.tb = tb;
  g.c = c.data<float>();
  g.ldc = c.row_stride();
  g.alpha = static_cast<float>(alpha);
  g.beta = static_cast<float>(beta);
  row_major_sgemm(c.device().index, g);
}

// The bias broadcast into c, then the product accumulated onto it (beta 1): two launches.
// cuBLASLt's bias epilogue would make it one; it waits for a GPU to be checked on.
void gemm_bias(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
               const Tensor& bias) {
  if (c.empty()) return;
  cudaStream_t stream = backend::enter_device(c.device().index);
  DB_CHECK_CUDA(
      kernels::rows_from_bias(c.data<float>(), bias.data<float>(), c.dim(0), c.dim(1), stream));
  cuda::gemm(c, a, ta, b, tb, 1.0, 1.0);
}

// The product accumulated by cuBLAS (beta 1), then the bias-gradient kernel: two launches.
// cuBLASLt's BGRADB epilogue would make it one; it waits for a GPU to be checked on.
void affine_grad(const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x) {
  if (dw.empty() || dy.empty()) return;
  cuda::gemm(dw, dy, Trans::T, x, Trans::N, 1.0, 1.0);
  cuda::bias_grad(db, dy);
}

void gemm_batched(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
                  double alpha, double beta) {
  GemmCall g{};
  g.batch = c.dim(0);
  g.m = c.dim(1);
  g.n = c.dim(2);
  g.k = ta == Trans::N ? a.dim(2) : a.dim(1);
  g.a = a.data<float>();
  g.lda = a.dim(2);
  g.stride_a = a.dim(1) * a.dim(2);
  g.ta = ta;
  g.b = b.data<float>();
  g.ldb = b.dim(2);
  g.stride_b = b.dim(1) * b.dim(2);
  g.tb = tb;
  g.c = c.data<float>();
  g.ldc = g.n;
  g.stride_c = g.m * g.n;
  g.alpha = static_cast<float>(alpha);
  g.beta = static_cast<float>(beta);
  row_major_sgemm(c.device().index, g);
}

}  // namespace depbloom::ops::cuda
