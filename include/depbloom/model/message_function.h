// TGN's identity message function: msg = [s_self || s_other || edge features]. The time
// encoding of the mail's age is added later by the memory updater, when the mail is read.
// No parameters; every gradient overwrites.
#pragma once

#include <cstdint>

#include "depbloom/core/tensor.h"

namespace depbloom::model {

class MessageFunction {
 public:
  // edge_dim may be 0 (datasets without edge features).
  MessageFunction(int64_t memory_dim, int64_t edge_dim);

  // msg [B, 2*d_mem + d_edge] = [s_self [B, d_mem] || s_other [B, d_mem] || edge [B, d_edge]].
  // With edge_dim 0, edge is Tensor{}.
  void forward(const Tensor& msg, const Tensor& s_self, const Tensor& s_other,
               const Tensor& edge) const;
  // d_self, d_other [B, d_mem] overwrite; d_edge [B, d_edge] is optional (Tensor{}), since
  // edge features are data. Needs no scratch when all three are given or edge_dim is 0;
  // otherwise `scratch_edge` [B, d_edge] receives the edge part.
  void backward(const Tensor& d_self, const Tensor& d_other, const Tensor& d_edge,
                const Tensor& d_msg, const Tensor& scratch_edge = Tensor{}) const;

  int64_t message_dim() const { return 2 * memory_dim_ + edge_dim_; }

 private:
  int64_t memory_dim_, edge_dim_;
};

}  // namespace depbloom::model
