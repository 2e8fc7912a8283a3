// Check macros for the CUDA runtime and cuBLAS: a failing call throws depbloom::Error with
// the expression, file, line and the library's own message. Include only in CUDA builds.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "depbloom/core/error.h"

namespace depbloom {
const char* cublas_status_name(cublasStatus_t s);
}

#define DB_CHECK_CUDA(expr)                                                                 \
  do {                                                                                      \
    cudaError_t db_err_ = (expr);                                                           \
    if (db_err_ != cudaSuccess) [[unlikely]]                                                \
      ::depbloom::throw_error(::depbloom::ErrorKind::runtime, __FILE__, __LINE__, #expr,    \
                              ::fmt::format("CUDA error {}: {}", cudaGetErrorName(db_err_), \
                                            cudaGetErrorString(db_err_)));                  \
  } while (0)

#define DB_CHECK_CUBLAS(expr)                                                        \
  do {                                                                               \
    cublasStatus_t db_st_ = (expr);                                                  \
    if (db_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                \
      ::depbloom::throw_error(                                                       \
          ::depbloom::ErrorKind::runtime, __FILE__, __LINE__, #expr,                 \
          ::fmt::format("cuBLAS error {}", ::depbloom::cublas_status_name(db_st_))); \
  } while (0)
