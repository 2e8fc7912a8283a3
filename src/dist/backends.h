// Internal: constructors of the communicators that need MPI or NCCL, so that the factory in
// communicator.cpp compiles without their headers. Each is defined only when built in.
#pragma once

#include <memory>

#include "depbloom/dist/communicator.h"

namespace depbloom::dist::detail {

#if DEPBLOOM_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator(Device device);
#endif
#if DEPBLOOM_WITH_NCCL
std::unique_ptr<Communicator> make_nccl_communicator();
#endif

// "[rank 3/4] message" on stderr, flushed (the line every abort path prints).
void print_rank_message(int rank, int size, const std::string& message) noexcept;

}  // namespace depbloom::dist::detail
