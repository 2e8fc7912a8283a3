// Spreading per-message rows over the copies and collecting them back, from gather (adding,
// with one term per copy), scale and scatter-add; the projections add one GEMM on the
// distinct messages each way.
#include "depbloom/model/copy_messages.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"

namespace depbloom::model {
namespace {

// own_rows: the caller also takes one row per copy (msg undefined), which needs no spreading.
void expect_messages(const char* what, const Tensor& per_msg, const Tensor& per_copy,
                     const CopyMessages& msgs, bool own_rows = false) {
  DB_ASSERT(msgs.distinct.defined() && per_msg.rank() == 2 &&
                per_msg.dim(0) == msgs.distinct.dim(0) && per_copy.rank() == 2 &&
                per_copy.dim(0) == msgs.copies && per_copy.dim(1) == per_msg.dim(1),
            "{}: per message {} and per copy {} do not fit {} distinct messages and {} copies",
            what, per_msg.str(), per_copy.str(), msgs.distinct.str(), msgs.copies);
  DB_ASSERT((msgs.msg.defined() ? msgs.msg.numel() == msgs.terms()
                                : own_rows && msgs.one_per_copy && per_msg.dim(0) == msgs.copies) &&
                (!msgs.weight.defined() || msgs.weight.numel() == msgs.terms()),
            "{}: {} terms with message indices {} and weights {}", what, msgs.terms(),
            msgs.msg.str(), msgs.weight.str());
  DB_ASSERT(!msgs.one_per_copy || !msgs.weight.defined(),
            "{}: one term per copy takes no weights, got {}", what, msgs.weight.str());
}

}  // namespace

void spread_to_copies(const Tensor& out, const Tensor& per_msg, const CopyMessages& msgs,
                      bool accumulate, Arena& arena) {
  expect_messages("spread_to_copies", per_msg, out, msgs);
  if (msgs.one_per_copy) {
    ops::gather_rows(out, per_msg, msgs.msg, accumulate);
    return;
  }
  if (!accumulate) ops::fill(out, 0.0);
  const int64_t t = msgs.terms();
  if (t == 0) return;
  Tensor term = arena.alloc(per_msg.dtype(), Shape(t, per_msg.dim(1)));
  ops::gather_rows(term, per_msg, msgs.msg);
  if (msgs.weight.defined()) ops::scale_rows(term, term, msgs.weight);
  ops::scatter_add_rows(out, term, msgs.row);
}

void collect_to_messages(const Tensor& per_msg, const Tensor& per_copy, const CopyMessages& msgs,
                         Arena& arena) {
  expect_messages("collect_to_messages", per_msg, per_copy, msgs);
  const int64_t t = msgs.terms();
  if (t == 0) return;
  if (msgs.one_per_copy) {
    ops::scatter_add_rows(per_msg, per_copy, msgs.msg);
    return;
  }
  Tensor term = arena.alloc(per_copy.dtype(), Shape(t, per_copy.dim(1)));
  ops::gather_rows(term, per_copy, msgs.row);
  if (msgs.weight.defined()) ops::scale_rows(term, term, msgs.weight);
  ops::scatter_add_rows(per_msg, term, msgs.msg);
}

void project_messages(const Tensor& out, const Tensor& w, const CopyMessages& msgs, bool accumulate,
                      Arena& arena, const Tensor& b) {
  DB_ASSERT(!b.defined() || msgs.one_per_copy,
            "project_messages: a bias needs one term per copy (weights would scale it)");
  if (!msgs.msg.defined()) {  // one row per copy: nothing to spread
    expect_messages("project_messages", out, out, msgs, /*own_rows=*/true);
    ops::gemm(out, msgs.distinct, ops::Trans::N, w, ops::Trans::T, 1.0, accumulate ? 1.0 : 0.0);
    if (b.defined()) ops::bias_add(out, b);
    return;
  }
  const int64_t d = msgs.distinct.dim(0);
  Tensor proj = arena.alloc(out.dtype(), Shape(d, w.dim(0)));
  if (b.defined())
    ops::gemm_bias(proj, msgs.distinct, ops::Trans::N, w, ops::Trans::T, b);
  else
    ops::gemm(proj, msgs.distinct, ops::Trans::N, w, ops::Trans::T);
  spread_to_copies(out, proj, msgs, accumulate, arena);
}

void project_messages_backward(const Tensor& d_distinct, const Tensor& dw, const Tensor& d_out,
                               const Tensor& w, const CopyMessages& msgs, Arena& arena,
                               const Tensor& db) {
  const int64_t d = msgs.distinct.dim(0);
  Tensor d_proj = d_out;
  if (msgs.msg.defined()) {
    d_proj = arena.alloc(d_out.dtype(), Shape(d, d_out.dim(1)));
    ops::fill(d_proj, 0.0);
    collect_to_messages(d_proj, d_out, msgs, arena);
  } else {
    expect_messages("project_messages_backward", d_out, d_out, msgs, /*own_rows=*/true);
  }
  if (db.defined())
    ops::affine_grad(dw, db, d_proj, msgs.distinct);
  else
    ops::gemm(dw, d_proj, ops::Trans::T, msgs.distinct, ops::Trans::N, 1.0, 1.0);
  if (wanted(d_distinct)) ops::gemm(d_distinct, d_proj, ops::Trans::N, w, ops::Trans::N, 1.0, 1.0);
}

CopyMessages encode_times(const TimeEncoder& enc, TimeEncoderContext& ctx, const CopyTimes& times,
                          Arena& arena) {
  DB_ASSERT(times.distinct.defined() && times.distinct.rank() == 1 &&
                (!times.of.defined() || times.of.rank() == 1),
            "encode_times: gaps {} with index {}, expected [Dt] and [R]", times.distinct.str(),
            times.of.str());
  Tensor encoded = arena.alloc(times.distinct.dtype(), Shape(times.distinct.numel(), enc.dim()));
  enc.forward(encoded, ctx, times.distinct);
  return CopyMessages{encoded, Tensor{}, times.of, Tensor{}, times.copies(), true};
}

}  // namespace depbloom::model
