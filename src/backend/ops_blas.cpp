// Dispatch layer for the BLAS-shaped ops (gemm, batched gemm, bias add and its gradient):
// entry checks on shapes, dtypes and devices, then the CPU or CUDA implementation.
// The arithmetic lives in src/backend/cpu and src/backend/cuda.
#include <atomic>

#include "backend/op_checks.h"
#include "depbloom/backend/runtime.h"

namespace depbloom::ops {
namespace {

const char* trans_name(Trans t) {
  return t == Trans::N ? "N" : "T";
}

// op(x) of a 2-D matrix: rows and columns after the optional transpose.
struct OpDims {
  int64_t rows;
  int64_t cols;
};
OpDims op_dims(const Tensor& x, Trans t, int first_dim) {
  int64_t d0 = x.dim(first_dim), d1 = x.dim(first_dim + 1);
  return t == Trans::N ? OpDims{d0, d1} : OpDims{d1, d0};
}

// Shared by gemm and gemm_batched: `first_dim` is 0 for plain matrices, 1 when a leading
// batch dimension precedes them.
void check_gemm_shapes(const char* op, const Tensor& c, const Tensor& a, Trans ta, const Tensor& b,
                       Trans tb, int first_dim) {
  detail::common_device(op, c, a, b);
  detail::require_float(op, "c", c);
  detail::require_same_dtype(op, "a", a, "c", c);
  detail::require_same_dtype(op, "b", b, "c", c);
  const int rank = first_dim + 2;
  detail::require_rank(op, "c", c, rank);
  detail::require_rank(op, "a", a, rank);
  detail::require_rank(op, "b", b, rank);
  OpDims oa = op_dims(a, ta, first_dim), ob = op_dims(b, tb, first_dim);
  DB_ASSERT(oa.cols == ob.rows,
            "{}: inner dimensions differ: op{}(a) of {} is [{}, {}], op{}(b) of {} is [{}, {}]", op,
            trans_name(ta), a.str(), oa.rows, oa.cols, trans_name(tb), b.str(), ob.rows, ob.cols);
  DB_ASSERT(c.dim(first_dim) == oa.rows && c.dim(first_dim + 1) == ob.cols,
            "{}: c is {} but op{}(a) of {} times op{}(b) of {} is [{}, {}]", op, c.str(),
            trans_name(ta), a.str(), trans_name(tb), b.str(), oa.rows, ob.cols);
}

std::atomic<int64_t> g_gemm_flops{0};

// 2 m n k per product; k is op(a)'s columns.
void count_gemm(const Tensor& c, const Tensor& a, Trans ta, int first_dim, int64_t products) {
  const int64_t k = op_dims(a, ta, first_dim).cols;
  g_gemm_flops.fetch_add(2 * products * c.dim(first_dim) * c.dim(first_dim + 1) * k,
                         std::memory_order_relaxed);
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb, double alpha,
          double beta) {
  check_gemm_shapes("gemm", c, a, ta, b, tb, 0);
  count_gemm(c, a, ta, 0, 1);
  DB_DISPATCH_WINDOWED_OP(gemm, c.device(), c.dtype(), c, a, ta, b, tb, alpha, beta);
}

void gemm_bias(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
               const Tensor& bias) {
  const char* op = "gemm_bias";
  check_gemm_shapes(op, c, a, ta, b, tb, 0);
  detail::common_device(op, c, bias);
  detail::require_same_dtype(op, "bias", bias, "c", c);
  detail::require_vector(op, "bias", bias, c.dim(1), "c", c);
  detail::require_packed(op, c, bias);  // a and b may be column windows
  count_gemm(c, a, ta, 0, 1);
  DB_DISPATCH_WINDOWED_OP(gemm_bias, c.device(), c.dtype(), c, a, ta, b, tb, bias);
}

void affine_grad(const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x) {
  const char* op = "affine_grad";
  // dw = dy^T x in gemm's terms: its shape checks name dw as c, dy as a and x as b.
  check_gemm_shapes(op, dw, dy, Trans::T, x, Trans::N, 0);
  detail::common_device(op, dw, db);
  detail::require_vector(op, "db", db, dw.dim(0), "dw", dw);
  detail::require_packed(op, db, dy);  // dw and x may be column windows
  count_gemm(dw, dy, Trans::T, 0, 1);
  DB_DISPATCH_WINDOWED_OP(affine_grad, dw.device(), dw.dtype(), dw, db, dy, x);
}

void gemm_batched(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
                  double alpha, double beta) {
  const char* op = "gemm_batched";
  check_gemm_shapes(op, c, a, ta, b, tb, 1);
  DB_ASSERT(a.dim(0) == c.dim(0) && b.dim(0) == c.dim(0),
            "{}: batch counts differ: c {}, a {}, b {}", op, c.str(), a.str(), b.str());
  count_gemm(c, a, ta, 1, c.dim(0));
  DB_DISPATCH_OP(gemm_batched, c.device(), c.dtype(), c, a, ta, b, tb, alpha, beta);
}

void bias_add(const Tensor& y, const Tensor& bias) {
  const char* op = "bias_add";
  detail::common_device(op, y, bias);
  detail::require_float(op, "y", y);
  DB_ASSERT(y.rank() >= 1, "{}: y must have at least one dimension, got {}", op, y.str());
  detail::require_vector(op, "bias", bias, y.dim(y.rank() - 1), "y", y);
  DB_DISPATCH_OP(bias_add, y.device(), y.dtype(), y, bias);
}

void bias_grad(const Tensor& dbias, const Tensor& dy) {
  const char* op = "bias_grad";
  detail::common_device(op, dbias, dy);
  detail::require_float(op, "dy", dy);
  DB_ASSERT(dy.rank() >= 1, "{}: dy must have at least one dimension, got {}", op, dy.str());
  detail::require_vector(op, "dbias", dbias, dy.dim(dy.rank() - 1), "dy", dy);
  DB_DISPATCH_OP(bias_grad, dy.device(), dy.dtype(), dbias, dy);
}

}  // namespace depbloom::ops

namespace depbloom::backend {

int64_t gemm_flops_issued() {
  return ops::g_gemm_flops.load(std::memory_order_relaxed);
}

}  // namespace depbloom::backend
