// Tgnn's refinement (DESIGN.md 7.2): the refine stage (each refined copy corrected from its
// earlier in-batch messages), its backward, and the optional coherence loss that pulls the
// copies toward what the model's own updater gives when it applies those messages in order.
#include "depbloom/backend/ops.h"
#include "depbloom/model/tgnn.h"
#include "model/tgnn_parts.h"

namespace depbloom::model {

UpdaterRefinement& Tgnn::updater_refinement() const {
  UpdaterRefinement* updater = memory_->refinement();
  if (updater == nullptr) DB_THROW(runtime, "tgnn: a model without memory has no updater to apply");
  return *updater;
}

void Tgnn::refine(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows,
                  const Tensor& edge_feat, Arena& arena) {
  const int64_t r = in.refine.row.defined() ? in.refine.row.numel() : 0;
  refined_ = r;
  if (r == 0) return;
  DB_ASSERT(refiner_ != nullptr, "tgnn: {} refined rows but the model has no refiner", r);
  DB_ASSERT(updated.rank() == 2 && updated.dim(0) == rows_ + r,
            "tgnn: refinement needs updated [{}, {}], got {}", rows_ + r, cfg_.d_mem,
            updated.str());
  const DType dtype = updated.dtype();
  const int64_t d = cfg_.d_mem;
  const Tensor base = updated.rows(0, rows_);
  refine_s_ = arena.alloc(dtype, Shape(r, d));
  ops::gather_rows(refine_s_, base, in.refine.row);
  // Each distinct message as collect() builds the mail: the endpoints' updated rows at that
  // event and its edge features.
  const int64_t n = in.refine.msg_self.numel();
  Tensor msg = arena.alloc(dtype, Shape(n, cfg_.d_mail()));
  Tensor self = arena.alloc(dtype, Shape(n, d)), other = arena.alloc(dtype, Shape(n, d));
  ops::gather_rows(self, base, in.refine.msg_self);
  ops::gather_rows(other, base, in.refine.msg_other);
  if (cfg_.d_edge > 0) {
    Tensor edge = arena.alloc(dtype, Shape(n, cfg_.d_edge));
    ops::gather_rows(edge, edge_feat, in.refine.msg_eid);
    ops::concat_cols(msg, {self, other, edge});
  } else {
    ops::concat_cols(msg, {self, other});
  }
  refine_msgs_ =
      CopyMessages{msg, in.refine.term_row,         in.refine.term_msg, in.refine.term_weight,
                   r,   in.refine.term_one_per_copy};
  refine_base_ = in.refine.row;
  msg_self_ = in.refine.msg_self, msg_other_ = in.refine.msg_other;
  DB_ASSERT(in.refine.dts.defined() && in.refine.dt_of.defined() && in.refine.dt_of.numel() == r,
            "tgnn: {} refined copies need their distinct gaps and refine_dt_of [{}]", r, r);
  const CopyTimes gaps{in.refine.dts, in.refine.dt_of};
  Tensor start = refine_s_;
  if (cfg_.refine_start == RefineStart::updater) {
    // The copies' base rows, each once (the updater reads them through W_hh).
    const int64_t nb = in.refine.base.numel();
    Tensor bases = arena.alloc(dtype, Shape(nb, d));
    ops::gather_rows(bases, base, in.refine.base);
    refine_bases_ = in.refine.base;
    refine_rows_ = CopyMessages{bases, Tensor{}, in.refine.base_of, Tensor{}, r, true};
    start = arena.alloc(dtype, Shape(r, d));
    updater_refinement().forward_start(start, refine_s_, refine_rows_, refine_msgs_,
                                       start_dt(in, gaps, rows, arena), arena);
  }
  refiner_->forward(updated.rows(rows_, rows_ + r), refine_ctx_, start, refine_msgs_, gaps, arena);
}

void Tgnn::refine_backward(const Tensor& d_updated, Arena& arena) {
  const DType dtype = d_updated.dtype();
  const int64_t r = refined_, d = cfg_.d_mem, n = msg_self_.numel();
  Tensor d_s = arena.alloc(dtype, Shape(r, d));
  Tensor d_msg = arena.alloc(dtype, Shape(n, cfg_.d_mail()));
  ops::fill(d_msg, 0.0);
  refiner_->backward(d_s, d_msg, d_updated.rows(rows_, rows_ + r), refine_ctx_, arena);
  const Tensor d_base = d_updated.rows(0, rows_);
  if (cfg_.refine_start == RefineStart::updater) {  // through u = updater(s, m)
    const Tensor d_u = d_s;
    d_s = arena.alloc(dtype, Shape(r, d));
    Tensor d_bases = arena.alloc(dtype, refine_rows_.distinct.shape());
    ops::fill(d_bases, 0.0);
    updater_refinement().backward_start(d_s, d_bases, d_msg, d_u, arena);
    ops::scatter_add_rows(d_base, d_bases, refine_bases_);
  }
  ops::scatter_add_rows(d_base, d_s, refine_base_);
  // Edge features are data: their columns' gradient is dropped.
  Tensor d_self = arena.alloc(dtype, Shape(n, d)), d_other = arena.alloc(dtype, Shape(n, d));
  if (cfg_.d_edge > 0) {
    ops::split_cols({d_self, d_other, arena.alloc(dtype, Shape(n, cfg_.d_edge))}, d_msg);
  } else {
    ops::split_cols({d_self, d_other}, d_msg);
  }
  ops::scatter_add_rows(d_base, d_self, msg_self_);
  ops::scatter_add_rows(d_base, d_other, msg_other_);
}

// The dt the updater reads a copy's message with when the correction starts from its output
// (refine.start: updater): TGL's mail time reads it at the copy's refine dt; the TGN authors'
// fixes it at the latest earlier event, since the node's update before it.
CopyTimes Tgnn::start_dt(const TgnnInputs& in, const CopyTimes& gaps, const MemoryRows& rows,
                         Arena& arena) const {
  if (!cfg_.mail_dt_at_event) return gaps;
  const int64_t r = refined_;
  DB_ASSERT(in.refine.mail_dt.defined() && in.refine.mail_dt.numel() == r &&
                in.refine.first.defined() && in.refine.first.numel() == r,
            "tgnn: refine.start updater with the authors' mail time needs refine_mail_dt and "
            "refine_first [{}]",
            r);
  const DType dtype = in.refine.dt.dtype();
  Tensor last = arena.alloc(dtype, Shape(r, 1));
  ops::gather_rows(last, rows.last_update.reshape(Shape(rows_, 1)), in.refine.row);
  Tensor first_last = arena.alloc(dtype, Shape(r));
  ops::mul(first_last, last.reshape(Shape(r)), in.refine.first);
  Tensor dt = arena.alloc(dtype, Shape(r));
  ops::sub(dt, in.refine.mail_dt, first_last);
  return dt;
}

// Round i applies each of the first copies' i-th earlier mail (the plan sorted them by count)
// to what the previous round left, starting from the copies' base rows.
void Tgnn::coherence_target(const Tensor& target, const Tensor& updated, const TgnnInputs& in,
                            const MemoryRows& rows, const Tensor& edge_feat, Arena& arena) {
  const int64_t s = in.coherence.copy.defined() ? in.coherence.copy.numel() : 0, d = cfg_.d_mem;
  DB_ASSERT(target.rank() == 2 && target.dim(0) == s && target.dim(1) == d,
            "tgnn: the coherence target of {} copies must be [{}, {}], got {}", s, s, d,
            target.str());
  coherence_copy_ = in.coherence.copy;
  if (s == 0) return;
  DB_ASSERT(refined_ > 0, "tgnn: a coherence target without refined copies");
  DB_ASSERT(in.coherence.round.device().is_cpu() && in.coherence.round.dtype() == DType::i64,
            "tgnn: the coherence rounds must be host i64 offsets, got {}",
            in.coherence.round.str());
  const DType dtype = target.dtype();
  const Tensor base = updated.rows(0, rows_);
  ops::gather_rows(target, refine_s_, in.coherence.copy);
  Tensor self = arena.alloc(dtype, Shape(s, d)), other = arena.alloc(dtype, Shape(s, d));
  Tensor edge = cfg_.d_edge > 0 ? arena.alloc(dtype, Shape(s, cfg_.d_edge)) : Tensor{};
  Tensor msg = arena.alloc(dtype, Shape(s, cfg_.d_mail()));
  Tensor next = arena.alloc(dtype, Shape(s, d));
  const int64_t* round = in.coherence.round.data<int64_t>();
  for (int64_t i = 0; i + 1 < in.coherence.round.numel(); ++i) {
    const int64_t lo = round[i], hi = round[i + 1], n = hi - lo;
    ops::gather_rows(self.rows(0, n), base, in.coherence.self.rows(lo, hi));
    ops::gather_rows(other.rows(0, n), base, in.coherence.other.rows(lo, hi));
    if (cfg_.d_edge > 0) {
      ops::gather_rows(edge.rows(0, n), edge_feat, in.coherence.eid.rows(lo, hi));
      ops::concat_cols(msg.rows(0, n), {self.rows(0, n), other.rows(0, n), edge.rows(0, n)});
    } else {
      ops::concat_cols(msg.rows(0, n), {self.rows(0, n), other.rows(0, n)});
    }
    Tensor dt = in.coherence.dt.rows(lo, hi);
    if (cfg_.mail_dt_at_event && i == 0) {  // the first mail's age: since the step's last update
      Tensor last = arena.alloc(dtype, Shape(refined_, 1));
      ops::gather_rows(last, rows.last_update.reshape(Shape(rows_, 1)), refine_base_);
      Tensor own = arena.alloc(dtype, Shape(n, 1));
      ops::gather_rows(own, last, in.coherence.copy.rows(0, n));
      dt = arena.alloc(dtype, Shape(n));
      ops::sub(dt, in.coherence.dt.rows(lo, hi), own.reshape(Shape(n)));
    }
    updater_refinement().apply_detached(next.rows(0, n), target.rows(0, n), msg.rows(0, n), dt,
                                        arena);
    ops::copy(target.rows(0, n), next.rows(0, n));
  }
}

void Tgnn::coherence_loss(const Tensor& loss, const Tensor& updated, const Tensor& target,
                          Arena& arena) {
  const int64_t s = target.dim(0), d = cfg_.d_mem;
  DB_ASSERT(loss.numel() == 1 && coherence_copy_.defined() && coherence_copy_.numel() == s,
            "tgnn: the coherence loss of {} copies after a target of {}", s, coherence_copy_.str());
  coherence_rows_ = s;
  if (s == 0) {
    ops::fill(loss, 0.0);
    return;
  }
  coherence_diff_ = arena.alloc(target.dtype(), Shape(s, d));
  ops::gather_rows(coherence_diff_, updated.rows(rows_, rows_ + refined_), coherence_copy_);
  ops::axpy(coherence_diff_, -1.0, target);
  ops::sum_squares(loss, coherence_diff_);
  ops::scale(loss, cfg_.coherence_weight / static_cast<double>(s));
}

// d s'_c += share * weight * 2 (s'_c - target_c) / S; the target is a constant.
void Tgnn::coherence_backward(const Tensor& d_updated, double share, Arena& arena) {
  const int64_t s = coherence_rows_;
  if (s == 0 || share == 0.0 || cfg_.coherence_weight == 0.0) return;
  Tensor grad = arena.alloc(d_updated.dtype(), coherence_diff_.shape());
  ops::copy(grad, coherence_diff_);
  ops::scale(grad, 2.0 * share * cfg_.coherence_weight / static_cast<double>(s));
  ops::scatter_add_rows(d_updated.rows(rows_, rows_ + refined_), grad, coherence_copy_);
}

}  // namespace depbloom::model
