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

namespace depbloom::model {

struct CopyMessages {
  Tensor distinct;     // [D, d_msg]
  Tensor row;          // [T] i32 copy in [0, copies); may be undefined with one_per_copy
  Tensor msg;          // [T] i32 distinct message in [0, D)
  Tensor weight;       // [T] (distinct's dtype); undefined: every weight is 1
  int64_t copies = 0;  // R
  // Term t is copy t's only term, at weight 1 (refine.aggregate: last): spreading is then a
  // gather and collecting a scatter-add, with no pass over the terms in between.
  bool one_per_copy = false;

  int64_t terms() const { return one_per_copy ? copies : row.defined() ? row.numel() : 0; }
};

// out [R, N] = each copy's weighted sum of the rows of per_msg [D, N] its terms name, or +=
// with accumulate.
void spread_to_copies(const Tensor& out, const Tensor& per_msg, const CopyMessages& msgs,
                      bool accumulate, Arena& arena);
// The adjoint: per_msg [D, N] row msg[t] += weight[t] * per_copy [R, N] row row[t].
void collect_to_messages(const Tensor& per_msg, const Tensor& per_copy, const CopyMessages& msgs,
                         Arena& arena);

// out [R, N] = (each copy's message) w^T for w [N, d_msg], or += with accumulate, computed
// as distinct w^T spread over the copies.
void project_messages(const Tensor& out, const Tensor& w, const CopyMessages& msgs, bool accumulate,
                      Arena& arena);
// Its backward from d_out [R, N]: dw [N, d_msg] += d_proj^T distinct and, when wanted,
// d_distinct [D, d_msg] += d_proj w, with d_proj [D, N] the collected d_out.
void project_messages_backward(const Tensor& d_distinct, const Tensor& dw, const Tensor& d_out,
                               const Tensor& w, const CopyMessages& msgs, Arena& arena);

}  // namespace depbloom::model
