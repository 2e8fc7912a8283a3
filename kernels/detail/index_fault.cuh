// Device side of IndexFault (gather_scatter.cuh): how a kernel records an index past its
// table. Only the first fault is kept, so the host's report names the op that met it first.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gather_scatter.cuh"

namespace depbloom::kernels::detail {

// Whether `row` is past the table; when it is, the first such index is recorded in `fault`.
__device__ __forceinline__ bool past_table(IndexFault* fault, IndexOp op, int64_t row,
                                           int64_t rows) {
  if (row < rows) return false;
  if (atomicCAS(&fault->op, static_cast<int>(kNoFault), static_cast<int>(op)) == kNoFault) {
    fault->index = static_cast<long long>(row);
    fault->rows = static_cast<long long>(rows);
  }
  return true;
}

}  // namespace depbloom::kernels::detail
