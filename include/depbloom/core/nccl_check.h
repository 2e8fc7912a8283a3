// Check macro for NCCL: the failing expression, file, line and ncclGetErrorString's text
// (plus ncclGetLastError's detail when NCCL has one). Include only where NCCL is linked.
#pragma once

#include <nccl.h>

#include "depbloom/core/error.h"

#define DB_CHECK_NCCL(expr)                                                                    \
  do {                                                                                         \
    ncclResult_t db_nr_ = (expr);                                                              \
    if (db_nr_ != ncclSuccess && db_nr_ != ncclInProgress) [[unlikely]]                        \
      ::depbloom::throw_error(::depbloom::ErrorKind::runtime, __FILE__, __LINE__, #expr,       \
                              ::fmt::format("NCCL error: {} ({})", ncclGetErrorString(db_nr_), \
                                            ncclGetLastError(nullptr)));                       \
  } while (0)
