// Deterministic reductions: bias gradient, sum, sum of squares, the BCE loss and the
// time-encoding parameter gradients, each a small functor over the column or scalar
// reduction templates of detail/reduce.cuh.
#include "reduce.cuh"

#include "detail/reduce.cuh"
#include "detail/sigmoid.cuh"

namespace depbloom::kernels {
namespace {

struct BiasGradTerm {
  const float* dy;
  int64_t cols;
  __device__ void operator()(int64_t r, int64_t c, double v[1]) const {
    v[0] = static_cast<double>(dy[r * cols + c]);
  }
};

struct ValueTerm {
  const float* x;
  __device__ double operator()(int64_t i) const { return static_cast<double>(x[i]); }
};

struct SquareTerm {
  const float* x;
  __device__ double operator()(int64_t i) const {
    const double v = static_cast<double>(x[i]);
    return v * v;
  }
};

// The per-element loss in double, as the CPU computes it; never exponentiates a positive
// number. With dlogits, also the element's gradient, as bce_backward writes it (the
// reduction visits every element once).
struct BceTerm {
  const float* logits;
  const float* targets;
  float* dlogits;
  float scale;
  __device__ double operator()(int64_t i) const {
    if (dlogits != nullptr) dlogits[i] = (detail::stable_sigmoid(logits[i]) - targets[i]) * scale;
    const auto x = static_cast<double>(logits[i]);
    const auto y = static_cast<double>(targets[i]);
    return fmax(x, 0.0) - x * y + log1p(exp(-fabs(x)));
  }
};

// v[0] feeds dw, v[1] feeds db, in the CPU's precision: a float product sin * dout, then
// double. The phase is rounded as in the forward (no fused multiply-add), as on the CPU.
struct TimeEncodeGradTerm {
  const float* dout;
  const float* dt;
  int64_t dt_rows;  // rows past them (all when dt is null) have zero deltas
  const float* w;
  const float* b;
  int64_t dims;
  __device__ void operator()(int64_t r, int64_t c, double v[2]) const {
    const float t = r < dt_rows ? dt[r] : 0.0f;
    const float phase = __fadd_rn(__fmul_rn(t, w[c]), b[c]);
    const double g = -static_cast<double>(sinf(phase) * dout[r * dims + c]);
    v[0] = g * static_cast<double>(t);
    v[1] = g;
  }
};

}  // namespace

size_t column_reduce_workspace_bytes(int64_t rows, int64_t cols, int outputs) {
  return detail::column_workspace_bytes(rows, cols, outputs);
}

size_t scalar_reduce_workspace_bytes(int64_t n) {
  return detail::scalar_workspace_bytes(n);
}

cudaError_t bias_grad(float* dbias, const float* dy, int64_t rows, int64_t cols, void* workspace,
                      cudaStream_t stream) {
  return detail::column_reduce<1>(BiasGradTerm{dy, cols}, rows, cols, dbias, nullptr, workspace,
                                  stream);
}

cudaError_t sum(float* out, const float* x, int64_t n, void* workspace, cudaStream_t stream) {
  return detail::scalar_reduce(ValueTerm{x}, n, out, 1.0, workspace, stream);
}

cudaError_t sum_squares(float* out, const float* x, int64_t n, void* workspace,
                        cudaStream_t stream) {
  return detail::scalar_reduce(SquareTerm{x}, n, out, 1.0, workspace, stream);
}

cudaError_t bce_forward(float* loss, const float* logits, const float* targets, int64_t n,
                        void* workspace, cudaStream_t stream) {
  // An empty batch has loss 0 (the sum is 0; dividing by 1 keeps it so), as on the CPU.
  const double divisor = n > 0 ? static_cast<double>(n) : 1.0;
  return detail::scalar_reduce(BceTerm{logits, targets, nullptr, 0.0f}, n, loss, divisor, workspace,
                               stream);
}

cudaError_t bce_loss_and_grad(float* loss, float* dlogits, const float* logits,
                              const float* targets, int64_t n, float scale, void* workspace,
                              cudaStream_t stream) {
  const double divisor = n > 0 ? static_cast<double>(n) : 1.0;
  return detail::scalar_reduce(BceTerm{logits, targets, dlogits, scale}, n, loss, divisor,
                               workspace, stream);
}

cudaError_t time_encode_backward(float* dw, float* db, const float* dout, const float* dt,
                                 int64_t dt_rows, const float* w, const float* b, int64_t rows,
                                 int64_t dims, void* workspace, cudaStream_t stream) {
  const int64_t with_delta = dt == nullptr ? 0 : dt_rows;
  return detail::column_reduce<2>(TimeEncodeGradTerm{dout, dt, with_delta, w, b, dims}, rows, dims,
                                  dw, db, workspace, stream);
}

}  // namespace depbloom::kernels
