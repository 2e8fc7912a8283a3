// The one-rank communicator: identities and copies (stream-ordered for CUDA tensors).
#include "depbloom/dist/local_communicator.h"

#include <cstdlib>

#include "depbloom/backend/ops.h"
#include "dist/backends.h"

namespace depbloom::dist {

void LocalCommunicator::do_all_reduce(const Tensor& /*buf*/, ReduceOp /*op*/) {
  // The sum and the mean over one rank are the buffer itself.
}

void LocalCommunicator::do_all_gather(const Tensor& send, const Tensor& recv) {
  if (send.raw() != recv.raw() && !send.empty()) ops::copy(recv.flat(), send.flat());
}

void LocalCommunicator::do_all_gather_v(const Tensor& send, const Tensor& recv,
                                        const std::vector<int64_t>& /*counts*/) {
  if (send.raw() != recv.raw() && !send.empty()) ops::copy(recv.flat(), send.flat());
}

void LocalCommunicator::do_broadcast(const Tensor& /*buf*/, int /*root*/) {}

CommHandle LocalCommunicator::do_iall_reduce(const Tensor& buf, ReduceOp op) {
  do_all_reduce(buf, op);
  return CommHandle();
}

CommHandle LocalCommunicator::do_iall_gather_v(const Tensor& send, const Tensor& recv,
                                               const std::vector<int64_t>& counts) {
  do_all_gather_v(send, recv, counts);
  return CommHandle();
}

void LocalCommunicator::abort(int code, const std::string& message) {
  detail::print_rank_message(0, 1, message);
  std::_Exit(code);
}

}  // namespace depbloom::dist
