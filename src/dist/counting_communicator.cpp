// The counting communicator: collectives that only count, and all-gathers answered from
// what the caller set.
#include "depbloom/dist/counting_communicator.h"

#include <algorithm>

#include "depbloom/core/error.h"

namespace depbloom::dist {

CountingCommunicator::CountingCommunicator(int rank, int size, Device device)
    : rank_(rank), size_(size), device_(device) {
  DB_ASSERT(size >= 1 && rank >= 0 && rank < size, "counting communicator: rank {} of {}", rank,
            size);
}

void CountingCommunicator::do_all_gather(const Tensor& /*send*/, const Tensor& recv) {
  DB_ASSERT(recv.dtype() == DType::f64 && recv.device().is_cpu() &&
                recv.numel() == static_cast<int64_t>(gathered_.size()),
            "counting communicator: an all-gather into {} was answered with {} f64 values",
            recv.str(), gathered_.size());
  std::copy(gathered_.begin(), gathered_.end(), recv.data<double>());
}

void CountingCommunicator::abort(int code, const std::string& message) {
  DB_THROW(runtime, "counting communicator, rank {} of {}: abort ({}): {}", rank_, size_, code,
           message);
}

}  // namespace depbloom::dist
