// TGL's EdgePredictor: logit = w_out . relu(h_src W_src^T + b_src + h_dst W_dst^T + b_dst)
// + b_out, scored for B positive pairs and K negative destinations per source. Parameter
// gradients accumulate; d_src and d_dst overwrite.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/core/arena.h"
#include "depbloom/model/linear.h"
#include "depbloom/model/parameters.h"

namespace depbloom::model {

struct LinkPredictorContext {
  LinearContext src_fc, dst_fc, out_fc;
  Tensor hidden;  // [(1+K)B, d], after the ReLU
  int64_t batch = 0;
};

class LinkPredictor {
 public:
  // Declares "<name>.src_fc.*" [d, d], "<name>.dst_fc.*" [d, d], "<name>.out_fc.*" [1, d].
  LinkPredictor(ParameterStore& store, const std::string& name, int64_t dim);

  // logits [(1+K)B]: rows [0, B) score (src_b, dst_b), rows [jB, (j+1)B) for j >= 1 score
  // (src_b, the j-th negative of b) (TGL's order). h_src [B, d]; h_dst [(1+K)B, d] with the
  // positive destinations first, then the K blocks of negatives.
  void forward(const Tensor& logits, LinkPredictorContext& ctx, const Tensor& h_src,
               const Tensor& h_dst, Arena& arena) const;
  // d_src [B, d], d_dst [(1+K)B, d]: optional (Tensor{} to skip), overwrite;
  // d_logits [(1+K)B].
  void backward(const Tensor& d_src, const Tensor& d_dst, const Tensor& d_logits,
                const LinkPredictorContext& ctx, Arena& arena) const;

 private:
  int64_t dim_;
  Linear src_fc_, dst_fc_, out_fc_;
};

}  // namespace depbloom::model
