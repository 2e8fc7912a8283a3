// Dispatch layer for data movement and reductions: gather/scatter(-add) of rows, column concat
// and split, fill, copy (also across devices), sum and sum of squares. Pure data movement
// takes any dtype on the CPU; on a GPU every op but copy and fill is float32 only.
#include <string>

#include "backend/op_checks.h"

namespace depbloom::ops {
namespace {

// idx [n] i32/i64 selects rows of `table`; `rows` [n, W] is the other side of the copy.
void check_row_index(const char* op, const char* rows_name, const Tensor& rows,
                     const char* table_name, const Tensor& table, const Tensor& idx) {
  detail::require_index(op, "idx", idx);
  DB_ASSERT(rows.rank() >= 1 && table.rank() >= 1, "{}: {} {} and {} {} need a row dimension", op,
            rows_name, rows.str(), table_name, table.str());
  detail::require_same_dtype(op, rows_name, rows, table_name, table);
  DB_ASSERT(rows.dim(0) == idx.numel(), "{}: {} {} needs one row per index of idx {}", op,
            rows_name, rows.str(), idx.str());
  DB_ASSERT(rows.row_size() == table.row_size(), "{}: rows of {} {} and {} {} differ in width", op,
            rows_name, rows.str(), table_name, table.str());
}

// gather_cols's and copy_rows's tables: one CUDA launch takes them all (kernels::kMaxGatherParts).
constexpr size_t kMaxGatherParts = 4;

// Parts [R, Wi] (1-D parts count as [R, 1]) against the whole [R, sum Wi].
void check_column_parts(const char* op, std::initializer_list<Tensor> parts, const Tensor& whole) {
  detail::require_defined(op, "the concatenated tensor", whole);
  detail::require_rank(op, "the concatenated tensor", whole, 2);
  const int64_t width = detail::column_parts_width(op, parts, whole);
  if (width != whole.dim(1)) [[unlikely]] {
    std::string names;
    for (const Tensor& part : parts) names += (names.empty() ? "" : ", ") + part.str();
    DB_THROW(runtime, "{}: parts {} add up to {} columns but {} has {}", op, names, width,
             whole.str(), whole.dim(1));
  }
}

}  // namespace

void gather_rows(const Tensor& out, const Tensor& src, const Tensor& idx, bool accumulate) {
  const char* op = "gather_rows";
  detail::common_device(op, out, src, idx);
  if (accumulate) detail::require_float(op, "out", out);
  check_row_index(op, "out", out, "src", src, idx);
  DB_DISPATCH_OP(gather_rows, src.device(), src.dtype(), out, src, idx, accumulate);
}

void scatter_add_rows(const Tensor& dst, const Tensor& src, const Tensor& idx, bool deterministic) {
  const char* op = "scatter_add_rows";
  detail::common_device(op, dst, src, idx);
  detail::require_float(op, "dst", dst);
  check_row_index(op, "src", src, "dst", dst, idx);
  DB_DISPATCH_OP(scatter_add_rows, dst.device(), dst.dtype(), dst, src, idx, deterministic);
}

void scatter_sum_rows(const Tensor& dst, const Tensor& src, const Tensor& idx) {
  const char* op = "scatter_sum_rows";
  detail::common_device(op, dst, src, idx);
  detail::require_float(op, "dst", dst);
  check_row_index(op, "src", src, "dst", dst, idx);
  DB_DISPATCH_OP(scatter_sum_rows, dst.device(), dst.dtype(), dst, src, idx);
}

void scatter_rows(const Tensor& dst, const Tensor& src, const Tensor& idx) {
  const char* op = "scatter_rows";
  detail::common_device(op, dst, src, idx);
  detail::require_float(op, "dst", dst);
  check_row_index(op, "src", src, "dst", dst, idx);
  DB_DISPATCH_OP(scatter_rows, dst.device(), dst.dtype(), dst, src, idx);
}

void copy_rows(std::initializer_list<RowsPart> parts, const Tensor& dst_idx,
               const Tensor& src_idx) {
  const char* op = "copy_rows";
  DB_ASSERT(dst_idx.defined() || src_idx.defined(),
            "{}: neither index is given (copy moves whole tensors)", op);
  const Tensor& first_idx = dst_idx.defined() ? dst_idx : src_idx;
  for (const Tensor* idx : {&dst_idx, &src_idx}) {
    if (!idx->defined()) continue;
    detail::require_index(op, idx == &dst_idx ? "dst_idx" : "src_idx", *idx);
    detail::common_device(op, first_idx, *idx);
  }
  const int64_t n = first_idx.numel();
  DB_ASSERT(!dst_idx.defined() || !src_idx.defined() || src_idx.numel() == n,
            "{}: dst_idx {} and src_idx {} differ in length", op, dst_idx.str(), src_idx.str());
  DB_ASSERT(parts.size() >= 1 && parts.size() <= kMaxGatherParts,
            "{}: {} tables, 1 to {} are taken", op, parts.size(), kMaxGatherParts);
  const RowsPart* lead = nullptr;  // the first part with a destination: the others match its rows
  for (const RowsPart& p : parts) {
    if (!p.dst.defined()) continue;
    detail::common_device(op, first_idx, p.dst, p.src);
    detail::require_float(op, "dst", p.dst);
    detail::require_packed(op, p.dst, p.src);
    if (lead == nullptr) lead = &p;
    detail::require_same_dtype(op, "dst", p.dst, "the first dst", lead->dst);
    detail::require_same_dtype(op, "dst", p.dst, "src", p.src);
    DB_ASSERT(p.dst.rank() >= 1 && p.src.rank() >= 1 && p.dst.row_size() == p.src.row_size(),
              "{}: rows of dst {} and src {} differ in width", op, p.dst.str(), p.src.str());
    DB_ASSERT(p.dst.dim(0) == lead->dst.dim(0) && p.src.dim(0) == lead->src.dim(0),
              "{}: every dst needs the rows of {} and every src those of {}, got {} and {}", op,
              lead->dst.str(), lead->src.str(), p.dst.str(), p.src.str());
    DB_ASSERT(dst_idx.defined() || p.dst.dim(0) == n,
              "{}: without dst_idx, dst {} needs one row per index ({})", op, p.dst.str(), n);
    DB_ASSERT(src_idx.defined() || p.src.dim(0) == n,
              "{}: without src_idx, src {} needs one row per index ({})", op, p.src.str(), n);
  }
  if (lead == nullptr) return;  // every part skipped
  DB_DISPATCH_OP(copy_rows, lead->dst.device(), lead->dst.dtype(), parts, dst_idx, src_idx);
}

void concat_cols(const Tensor& out, std::initializer_list<Tensor> parts) {
  const char* op = "concat_cols";
  check_column_parts(op, parts, out);
  DB_DISPATCH_OP(concat_cols, out.device(), out.dtype(), out, parts);
}

void gather_cols(const Tensor& out, std::initializer_list<GatherPart> parts) {
  const char* op = "gather_cols";
  detail::require_defined(op, "out", out);
  detail::require_rank(op, "out", out, 2);
  DB_ASSERT(parts.size() >= 1 && parts.size() <= kMaxGatherParts,
            "{}: {} tables, 1 to {} are taken", op, parts.size(), kMaxGatherParts);
  int64_t width = 0;
  for (const GatherPart& p : parts) {
    detail::common_device(op, out, p.src, p.idx);
    detail::require_rank(op, "a table", p.src, 2);
    check_row_index(op, "out", out.cols(0, p.src.dim(1)), "a table", p.src, p.idx);
    detail::require_packed(op, p.src, p.idx);
    width += p.src.dim(1);
  }
  DB_ASSERT(width == out.dim(1), "{}: the tables' rows add up to {} columns but {} has {}", op,
            width, out.str(), out.dim(1));
  DB_DISPATCH_OP(gather_cols, out.device(), out.dtype(), out, parts);
}

void split_cols(std::initializer_list<Tensor> parts, const Tensor& in) {
  const char* op = "split_cols";
  check_column_parts(op, parts, in);
  DB_DISPATCH_OP(split_cols, in.device(), in.dtype(), parts, in);
}

void fill(const Tensor& x, double value) {
  detail::common_device("fill", x);
#if DEPBLOOM_WITH_CUDA
  // Data movement, like copy: integer and mask buffers are filled on the GPU too (f32, i32, i64
  // and u8; cuda::fill names the dtype it refuses).
  if (x.device().is_cuda()) {
    if (detail::counted(backend::OpKind::fill)) cuda::fill(x, value);
    return;
  }
#endif
  DB_DISPATCH_OP(fill, x.device(), x.dtype(), x, value);
}

void copy(const Tensor& dst, const Tensor& src) {
  const char* op = "copy";
  detail::require_defined(op, "dst", dst);
  detail::require_defined(op, "src", src);
  detail::require_same_dtype(op, "dst", dst, "src", src);
  DB_ASSERT(dst.numel() == src.numel(), "{}: dst {} and src {} differ in element count", op,
            dst.str(), src.str());
  if (dst.device().is_cpu() && src.device().is_cpu()) {
    if (detail::counted(backend::OpKind::copy)) cpu::copy(dst, src);
    return;
  }
#if DEPBLOOM_WITH_CUDA
  // Host<->device and device<->device, ordered on the calling thread's stream.
  if (detail::counted(backend::OpKind::copy)) cuda::copy(dst, src);
#else
  DB_THROW(runtime, "{}: {} <- {} needs a GPU but DepBloom was built without CUDA", op, dst.str(),
           src.str());
#endif
}

void sum(const Tensor& out, const Tensor& x) {
  const char* op = "sum";
  detail::common_device(op, out, x);
  detail::require_float(op, "x", x);
  detail::require_same_dtype(op, "out", out, "x", x);
  DB_ASSERT(out.numel() == 1, "{}: out must hold one element, got {} (x {})", op, out.str(),
            x.str());
  DB_DISPATCH_OP(sum, x.device(), x.dtype(), out, x);
}

void sum_squares(const Tensor& out, const Tensor& x) {
  const char* op = "sum_squares";
  detail::common_device(op, out, x);
  detail::require_float(op, "x", x);
  detail::require_same_dtype(op, "out", out, "x", x);
  DB_ASSERT(out.numel() == 1, "{}: out must hold one element, got {} (x {})", op, out.str(),
            x.str());
  DB_DISPATCH_OP(sum_squares, x.device(), x.dtype(), out, x);
}

}  // namespace depbloom::ops
