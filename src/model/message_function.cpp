// TGN's identity message function as a column concat and its inverse split.
#include "depbloom/model/message_function.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"

namespace depbloom::model {

MessageFunction::MessageFunction(int64_t memory_dim, int64_t edge_dim)
    : memory_dim_(memory_dim), edge_dim_(edge_dim) {
  DB_ASSERT(memory_dim > 0 && edge_dim >= 0, "message function needs memory > 0, edge >= 0: {}, {}",
            memory_dim, edge_dim);
}

void MessageFunction::forward(const Tensor& msg, const Tensor& s_self, const Tensor& s_other,
                              const Tensor& edge) const {
  if (edge_dim_ == 0)
    ops::concat_cols(msg, {s_self, s_other});
  else
    ops::concat_cols(msg, {s_self, s_other, edge});
}

void MessageFunction::backward(const Tensor& d_self, const Tensor& d_other, const Tensor& d_edge,
                               const Tensor& d_msg, const Tensor& scratch_edge) const {
  if (edge_dim_ == 0) return ops::split_cols({d_self, d_other}, d_msg);
  const Tensor& edge_part = wanted(d_edge) ? d_edge : scratch_edge;
  DB_ASSERT(wanted(edge_part), "message backward: give d_edge or scratch_edge [B, {}]", edge_dim_);
  ops::split_cols({d_self, d_other, edge_part}, d_msg);
}

}  // namespace depbloom::model
