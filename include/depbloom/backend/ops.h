// The op set: every numerical operation the models need, declared once. Each op checks
// shapes, dtypes and devices at entry (a mismatch throws with the shapes in the message)
// and dispatches on the tensors' device: the CPU implementation (OpenBLAS + OpenMP,
// float and double) or the CUDA one (cuBLAS + kernels/, float only; double on a GPU is an
// error, never a silent fallback). All tensors of one call must live on one device.
//
// Gradient contract: gradients of parameters (weights, biases, w/b of the time encoding,
// layer-norm gamma/beta) ACCUMULATE into their buffers; gradients of activations
// OVERWRITE theirs. Outputs come first, then inputs, then sizes and options.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "depbloom/core/philox.h"
#include "depbloom/core/tensor.h"

namespace depbloom::ops {

enum class Trans { N, T };

enum class Act { relu, sigmoid, tanh, leaky_relu };

// The Philox counter of each row of a dropout: first + r, or ids[r] when ids is defined
// (i64 [rows] on the op's device). Ids serve rows whose global index is not contiguous,
// e.g. the roots of one rank's slice of a batch, keyed by (event, role), so a mask never
// depends on how a batch was split or laid out.
struct DropoutRows {
  uint64_t first = 0;
  Tensor ids;
  DropoutRows(uint64_t first_row = 0) : first(first_row) {}  // NOLINT: rows are often a count
  explicit DropoutRows(const Tensor& row_ids) : ids(row_ids) {}
  bool keyed() const { return ids.defined(); }
};

// One table of gather_cols: its rows picked by idx (i32 or i64; negative: a zero row).
struct GatherPart {
  Tensor src;  // [rows, W]
  Tensor idx;  // [R]
};

// One table of copy_rows: rows of src copied into rows of dst (1-D tensors count as [N, 1]).
struct RowsPart {
  Tensor dst;  // [D, W]; undefined: the part is skipped
  Tensor src;  // [S, W]
};

struct AdamConfig {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // false: L2 added to the gradient (torch.optim.Adam); true: AdamW
};

#define DEPBLOOM_OP_DEFAULT(v) = v
#include "depbloom/backend/op_set.inc"  // IWYU pragma: export
#undef DEPBLOOM_OP_DEFAULT

}  // namespace depbloom::ops
