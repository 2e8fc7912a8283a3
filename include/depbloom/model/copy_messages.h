// The messages of refined copies (DESIGN.md 7.2) with each distinct message held once: copy
// c's message is the sum over the terms t with row[t] == c of weight[t] * distinct[msg[t]].
// A node's latest earlier event is the same for all of its rows in a micro-batch, so the
// messages repeat (about 11 copies share one at m = 8 on WIKI); every layer reads a copy's
// message through a linear map, so projecting each distinct message once and spreading the
// projections over the copies is exact and skips most of the widest GEMMs' work.
#pragma once

#include <cstdint>

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"
#include "depbloom/model/time_encoder.h"

namespace depbloom::model {

struct CopyMessages {
  Tensor distinct;  // [D, d_msg]
  Tensor row;       // [T] i32 copy in [0, copies); may be undefined with one_per_copy
  Tensor msg;  // [T] i32 distinct message in [0, D); undefined (one_per_copy, projections): row c
  Tensor weight;       // [T] (distinct's dtype); undefined: every weight is 1
  int64_t copies = 0;  // R
  // Term t is copy t's only term, at weight 1 (refine.aggregate: last): spreading is then a
  // gather and collecting a scatter-add, with no pass over the terms in between.
  bool one_per_copy = false;

  int64_t terms() const { return one_per_copy ? copies : row.defined() ? row.numel() : 0; }
};

// The copies' time gaps with each distinct value held once: copy c's gap is distinct[of[c]],
// or distinct[c] when `of` is undefined. A step's gaps repeat (about 3.3 copies per value at
// m = 8 on WIKI, whose times are whole seconds) and every layer reads a gap through its time
// encoding and then a linear map, so encoding and projecting each value once is exact.
struct CopyTimes {
  Tensor distinct;  // [Dt]
  Tensor of;        // [R] i32 in [0, Dt), or undefined (then Dt = R)

  CopyTimes() = default;
  CopyTimes(const Tensor& per_copy) : distinct(per_copy) {}  // NOLINT: one gap per copy
  CopyTimes(const Tensor& values, const Tensor& index) : distinct(values), of(index) {}
  int64_t copies() const { return of.defined() ? of.numel() : distinct.numel(); }
};

// The gaps' encodings [Dt, enc.dim()] from `arena`, each distinct gap encoded once, as one
// term per copy; ctx keeps the distinct gaps for enc.backward.
CopyMessages encode_times(const TimeEncoder& enc, TimeEncoderContext& ctx, const CopyTimes& times,
                          Arena& arena);

// out [R, N] = each copy's weighted sum of the rows of per_msg [D, N] its terms name, or +=
// with accumulate.
void spread_to_copies(const Tensor& out, const Tensor& per_msg, const CopyMessages& msgs,
                      bool accumulate, Arena& arena);
// The adjoint: per_msg [D, N] row msg[t] += weight[t] * per_copy [R, N] row row[t].
void collect_to_messages(const Tensor& per_msg, const Tensor& per_copy, const CopyMessages& msgs,
                         Arena& arena);

// out [R, N] = (each copy's message) w^T (+ b [N] when defined, one term per copy only) for
// w [N, d_msg], or += with accumulate, computed as distinct w^T + b spread over the copies:
// the bias is added to the D distinct rows instead of the R copies.
void project_messages(const Tensor& out, const Tensor& w, const CopyMessages& msgs, bool accumulate,
                      Arena& arena, const Tensor& b = Tensor{});
// Its backward from d_out [R, N]: dw [N, d_msg] += d_proj^T distinct, db [N] += d_proj's
// column sums (when defined) and, when wanted, d_distinct [D, d_msg] += d_proj w, with
// d_proj [D, N] the collected d_out.
void project_messages_backward(const Tensor& d_distinct, const Tensor& dw, const Tensor& d_out,
                               const Tensor& w, const CopyMessages& msgs, Arena& arena,
                               const Tensor& db = Tensor{});

}  // namespace depbloom::model
