// CUDA row-wise ops: masked softmax, neighbour attention, layer norm, row gather,
// scatter-add and scatter, column concat/split. Sizes come from the validated tensors;
// scratch memory (attention backward, reductions, the sort of the deterministic scatter)
// from the thread's reusable workspace.
#include <array>

#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_ops.h"
#include "depbloom/core/cuda_check.h"
#include "gather_scatter.cuh"
#include "rowwise.cuh"

namespace depbloom::ops::cuda {
namespace {

int device_of(const Tensor& t) {
  return t.device().index;
}

// Calls fn(pointer) with idx's data as const int32_t* or const int64_t*.
template <class Fn>
void with_index(const Tensor& idx, Fn&& fn) {
  switch (idx.dtype()) {
    case DType::i32:
      return fn(static_cast<const int32_t*>(idx.data<int32_t>()));
    case DType::i64:
      return fn(static_cast<const int64_t*>(idx.data<int64_t>()));
    default:
      break;
  }
  DB_THROW(runtime, "row index must be i32 or i64, got {}", idx.str());
}

// Runs `launch(parts, count)` over the parts in groups of kMaxColumnParts; each part is a
// [rows, width] block at its column offset in the whole (1-D parts are one column wide).
template <class Launch>
void for_column_parts(std::initializer_list<Tensor> parts, Launch&& launch) {
  std::array<kernels::ColumnPart, kernels::kMaxColumnParts> group{};
  int count = 0;
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    const int64_t width = p.row_size();
    group[static_cast<size_t>(count++)] = kernels::ColumnPart{p.data<float>(), width, offset};
    offset += width;
    if (count == kernels::kMaxColumnParts) {
      launch(group.data(), count);
      count = 0;
    }
  }
  if (count > 0) launch(group.data(), count);
}

}  // namespace

void masked_softmax_forward(const Tensor& y, const Tensor& x, const Tensor& mask) {
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(kernels::masked_softmax_forward(y.data<float>(), x.data<float>(),
                                                mask.data<uint8_t>(), x.dim(0), x.dim(1), stream));
}

void masked_softmax_backward(const Tensor& dx, const Tensor& dy, const Tensor& y) {
  cudaStream_t stream = backend::enter_device(device_of(dx));
  DB_CHECK_CUDA(kernels::masked_softmax_backward(dx.data<float>(), dy.data<float>(),
                                                 y.data<float>(), y.dim(0), y.dim(1), stream));
}

void attention_forward(const Tensor& out, const Tensor& attn, const Tensor& q, const Tensor& kv,
                       const Tensor& mask, int heads, double scale, double slope) {
  DB_ASSERT(heads > 0, "attention needs at least one head, got {}", heads);
  cudaStream_t stream = backend::enter_device(device_of(out));
  DB_CHECK_CUDA(kernels::attention_forward(
      out.data<float>(), attn.data<float>(), q.data<float>(), kv.data<float>(),
      mask.data<uint8_t>(), q.dim(0), kv.dim(1), heads, q.dim(1) / heads, static_cast<float>(scale),
      static_cast<float>(slope), stream));
}

void attention_backward(const Tensor& dq, const Tensor& dkv, const Tensor& dout, const Tensor& attn,
                        const Tensor& q, const Tensor& kv, const Tensor& mask, int heads,
                        double scale, double slope) {
  DB_ASSERT(heads > 0, "attention needs at least one head, got {}", heads);
  const int device = device_of(dq);
  const int64_t rows = q.dim(0);
  const int64_t slots = kv.dim(1);
  cudaStream_t stream = backend::enter_device(device);
  void* ws =
      backend::workspace(device, kernels::attention_backward_workspace_bytes(rows, slots, heads));
  DB_CHECK_CUDA(kernels::attention_backward(
      dq.data<float>(), dkv.data<float>(), dout.data<float>(), attn.data<float>(), q.data<float>(),
      kv.data<float>(), mask.data<uint8_t>(), rows, slots, heads, q.dim(1) / heads,
      static_cast<float>(scale), static_cast<float>(slope), ws, stream));
}

void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, double eps) {
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(kernels::layer_norm_forward(y.data<float>(), mean.data<float>(), rstd.data<float>(),
                                            x.data<float>(), gamma.data<float>(),
                                            beta.data<float>(), x.dim(0), x.dim(1), eps, stream));
}

void layer_norm_backward(const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& gamma) {
  const int device = device_of(dx);
  const int64_t rows = x.dim(0);
  const int64_t dim = x.dim(1);
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::layer_norm_backward_workspace_bytes(rows, dim));
  DB_CHECK_CUDA(kernels::layer_norm_backward(dx.data<float>(), dgamma.data<float>(),
                                             dbeta.data<float>(), dy.data<float>(), x.data<float>(),
                                             mean.data<float>(), rstd.data<float>(),
                                             gamma.data<float>(), rows, dim, ws, stream));
}

void gather_rows(const Tensor& out, const Tensor& src, const Tensor& idx, bool accumulate) {
  cudaStream_t stream = backend::enter_device(device_of(out));
  kernels::IndexFault* fault = backend::index_fault(device_of(out));
  const int64_t n = idx.numel();
  const int64_t width = src.row_size();
  with_index(idx, [&](auto* index) {
    DB_CHECK_CUDA(kernels::gather_rows(out.data<float>(), src.data<float>(), index, n, width,
                                       src.dim(0), accumulate, fault, stream));
  });
}

void scatter_add_rows(const Tensor& dst, const Tensor& src, const Tensor& idx, bool deterministic) {
  const int device = device_of(dst);
  const int64_t n = idx.numel();
  const int64_t width = dst.row_size();
  const int64_t dst_rows = dst.dim(0);
  cudaStream_t stream = backend::enter_device(device);
  kernels::IndexFault* fault = backend::index_fault(device);
  if (!deterministic) {
    with_index(idx, [&](auto* index) {
      DB_CHECK_CUDA(kernels::scatter_add_rows_atomic(dst.data<float>(), src.data<float>(), index, n,
                                                     width, dst_rows, fault, stream));
    });
    return;
  }
  if (n == 0 || width == 0) return;
  DB_ASSERT(n <= INT32_MAX && dst_rows < int64_t{UINT32_MAX},
            "deterministic scatter_add_rows on CUDA supports < 2^31 sources and < 2^32 - 1 "
            "destination rows, got {} into {}",
            n, dst_rows);
  const kernels::SortedScatterBytes ws_bytes =
      kernels::scatter_add_rows_sorted_workspace_bytes(n, dst_rows);
  DB_ASSERT(ws_bytes.total > 0, "cannot size the sort of scatter_add_rows ({} rows)", n);
  void* ws = backend::workspace(device, ws_bytes.total);
  with_index(idx, [&](auto* index) {
    DB_CHECK_CUDA(kernels::scatter_add_rows_sorted(dst.data<float>(), src.data<float>(), index, n,
                                                   width, dst_rows, ws, ws_bytes, fault, stream));
  });
}

void scatter_sum_rows(const Tensor& dst, const Tensor& src, const Tensor& idx) {
  cudaStream_t stream = backend::enter_device(device_of(dst));
  DB_CHECK_CUDA(cudaMemsetAsync(dst.raw(), 0, dst.numel() * sizeof(float), stream));
  scatter_add_rows(dst, src, idx, true);
}

void scatter_rows(const Tensor& dst, const Tensor& src, const Tensor& idx) {
  cudaStream_t stream = backend::enter_device(device_of(dst));
  kernels::IndexFault* fault = backend::index_fault(device_of(dst));
  const int64_t n = idx.numel();
  const int64_t width = dst.row_size();
  with_index(idx, [&](auto* index) {
    DB_CHECK_CUDA(kernels::scatter_rows(dst.data<float>(), src.data<float>(), index, n, width,
                                        dst.dim(0), fault, stream));
  });
}

void concat_cols(const Tensor& out, std::initializer_list<Tensor> parts) {
  if (out.empty()) return;
  cudaStream_t stream = backend::enter_device(device_of(out));
  const int64_t rows = out.dim(0);
  const int64_t total = out.row_size();
  for_column_parts(parts, [&](const kernels::ColumnPart* group, int count) {
    DB_CHECK_CUDA(kernels::concat_cols(out.data<float>(), rows, total, group, count, stream));
  });
}

void concat_cols_time_encode(const Tensor& out, std::initializer_list<Tensor> parts,
                             const Tensor& dt, const Tensor& w, const Tensor& b) {
  if (out.empty()) return;
  cudaStream_t stream = backend::enter_device(device_of(out));
  std::array<kernels::ColumnPart, kernels::kMaxColumnParts> group{};
  int count = 0;
  int64_t offset = 0;
  for (const Tensor& p : parts) {  // at most kMaxColumnParts (checked at dispatch)
    group[static_cast<size_t>(count++)] =
        kernels::ColumnPart{p.data<float>(), p.row_size(), offset};
    offset += p.row_size();
  }
  DB_CHECK_CUDA(kernels::concat_cols_time_encode(
      out.data<float>(), out.dim(0), out.row_size(), group.data(), count,
      dt.raw() == nullptr ? nullptr : dt.data<float>(), w.data<float>(), b.data<float>(), stream));
}

void gather_cols(const Tensor& out, std::initializer_list<GatherPart> parts) {
  if (out.empty()) return;
  const int device = device_of(out);
  cudaStream_t stream = backend::enter_device(device);
  std::array<kernels::GatherColumns, kernels::kMaxGatherParts> group{};
  int count = 0;
  int64_t offset = 0;
  for (const GatherPart& p : parts) {  // at most kMaxGatherParts (checked at dispatch)
    const int64_t width = p.src.dim(1);
    group[static_cast<size_t>(count++)] = kernels::GatherColumns{
        p.src.data<float>(), p.idx.raw(), p.idx.dtype() == DType::i64, width, offset, p.src.dim(0)};
    offset += width;
  }
  DB_CHECK_CUDA(kernels::gather_cols(out.data<float>(), out.dim(0), out.dim(1), group.data(), count,
                                     backend::index_fault(device), stream));
}

void copy_rows(std::initializer_list<RowsPart> parts, const Tensor& dst_idx,
               const Tensor& src_idx) {
  std::array<kernels::RowsCopy, kernels::kMaxGatherParts> group{};
  int count = 0;
  const RowsPart* lead = nullptr;
  for (const RowsPart& p : parts) {  // at most kMaxGatherParts (checked at dispatch)
    if (!p.dst.defined()) continue;
    if (lead == nullptr) lead = &p;
    group[static_cast<size_t>(count++)] =
        kernels::RowsCopy{p.dst.data<float>(), p.src.data<float>(), p.dst.row_size()};
  }
  auto side = [](const Tensor& idx, int64_t rows) {
    return kernels::RowSide{idx.defined() ? idx.raw() : nullptr,
                            idx.defined() && idx.dtype() == DType::i64, rows};
  };
  const int64_t n = (dst_idx.defined() ? dst_idx : src_idx).numel();
  const int device = device_of(lead->dst);
  cudaStream_t stream = backend::enter_device(device);
  DB_CHECK_CUDA(kernels::copy_rows(group.data(), count, side(dst_idx, lead->dst.dim(0)),
                                   side(src_idx, lead->src.dim(0)), n, backend::index_fault(device),
                                   stream));
}

void split_cols(std::initializer_list<Tensor> parts, const Tensor& in) {
  if (in.empty()) return;
  cudaStream_t stream = backend::enter_device(device_of(in));
  const int64_t rows = in.dim(0);
  const int64_t total = in.row_size();
  for_column_parts(parts, [&](const kernels::ColumnPart* group, int count) {
    DB_CHECK_CUDA(kernels::split_cols(group, count, in.data<float>(), rows, total, stream));
  });
}

}  // namespace depbloom::ops::cuda
