// TGL's EdgePredictor: the source projection is computed once per positive pair and added
// to each block of destination projections (positives, then the K negative blocks).
#include "depbloom/model/link_predictor.h"

#include "depbloom/backend/ops.h"

namespace depbloom::model {

LinkPredictor::LinkPredictor(ParameterStore& store, const std::string& name, int64_t dim)
    : dim_(dim),
      src_fc_(store, name + ".src_fc", dim, dim),
      dst_fc_(store, name + ".dst_fc", dim, dim),
      out_fc_(store, name + ".out_fc", dim, 1) {}

void LinkPredictor::forward(const Tensor& logits, LinkPredictorContext& ctx, const Tensor& h_src,
                            const Tensor& h_dst, Arena& arena) const {
  const int64_t batch = h_src.dim(0);
  const int64_t pairs = h_dst.dim(0);
  DB_ASSERT(batch > 0 && pairs % batch == 0 && logits.numel() == pairs,
            "link predictor: h_dst {} must hold (1+K) blocks of h_src {}, logits {} one per row",
            h_dst.str(), h_src.str(), logits.str());
  const DType dtype = h_src.dtype();
  Tensor src_part = arena.alloc(dtype, Shape(batch, dim_));
  src_fc_.forward(src_part, ctx.src_fc, h_src);
  ctx.hidden = arena.alloc(dtype, Shape(pairs, dim_));
  dst_fc_.forward(ctx.hidden, ctx.dst_fc, h_dst);
  ops::add_blocks_relu_forward(ctx.hidden, src_part);
  out_fc_.forward(logits.reshape(Shape(pairs, 1)), ctx.out_fc, ctx.hidden);
  ctx.batch = batch;
}

void LinkPredictor::backward(const Tensor& d_src, const Tensor& d_dst, const Tensor& d_logits,
                             const LinkPredictorContext& ctx, Arena& arena) const {
  const int64_t pairs = ctx.hidden.dim(0);
  const int64_t batch = ctx.batch;
  const DType dtype = ctx.hidden.dtype();
  Tensor d_hidden = arena.alloc(dtype, Shape(pairs, dim_));
  out_fc_.backward(d_hidden, d_logits.reshape(Shape(pairs, 1)), ctx.out_fc);
  // The source projection fed every block: its gradient is the sum over blocks.
  Tensor d_src_part = arena.alloc(dtype, Shape(batch, dim_));
  ops::add_blocks_relu_backward(d_src_part, d_hidden, ctx.hidden);
  dst_fc_.backward(d_dst, d_hidden, ctx.dst_fc);
  src_fc_.backward(d_src, d_src_part, ctx.src_fc);
}

}  // namespace depbloom::model
