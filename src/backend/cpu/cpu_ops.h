// Internal: the CPU implementation (OpenBLAS + OpenMP, float and double) of every op in
// include/depbloom/backend/op_set.inc, same signatures and semantics. Called only by the
// dispatch layer (src/backend/ops_*.cpp) after it has checked shapes, dtypes and devices,
// so implementations may assume valid arguments.
#pragma once

#include "depbloom/backend/ops.h"

namespace depbloom::ops::cpu {

#define DEPBLOOM_OP_DEFAULT(v)
#include "depbloom/backend/op_set.inc"
#undef DEPBLOOM_OP_DEFAULT

}  // namespace depbloom::ops::cpu
