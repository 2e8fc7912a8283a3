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

// Every abort path calls this first. The first caller returns, having marked the process as
// aborting (MPI is then not finalized on the way out: MPI_Finalize waits for the other
// ranks) and started a fallback that ends the process with `code` should the library's
// abort not end it within 10 s. A later caller (the watchdog and the main thread failing
// at once) never returns: the first one is already ending the process.
void begin_abort(int code) noexcept;
bool aborting() noexcept;

}  // namespace depbloom::dist::detail
