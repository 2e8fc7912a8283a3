// Check macro for MPI: the failing expression, file, line and MPI_Error_string's text.
// Communicators set MPI_ERRORS_RETURN so that failures reach this macro instead of aborting.
#pragma once

#include <mpi.h>

#include "depbloom/core/error.h"

namespace depbloom {
inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}
}  // namespace depbloom

#define DB_CHECK_MPI(expr)                                                               \
  do {                                                                                   \
    int db_mc_ = (expr);                                                                 \
    if (db_mc_ != MPI_SUCCESS) [[unlikely]]                                              \
      ::depbloom::throw_error(::depbloom::ErrorKind::runtime, __FILE__, __LINE__, #expr, \
                              "MPI error: " + ::depbloom::mpi_error_text(db_mc_));       \
  } while (0)
