// LocalCommunicator: the one-rank communicator. Collectives are identities (all-reduce,
// broadcast, barrier) or copies (all-gather into recv); non-blocking forms complete at once.
// Used for single-device runs so that the trainer has one code path for every P.
#pragma once

#include "depbloom/dist/communicator.h"

namespace depbloom::dist {

class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(Device device = Device::cpu()) : device_(device) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  CommunicatorKind kind() const override { return CommunicatorKind::local; }
  Device device() const override { return device_; }
  [[noreturn]] void abort(int code, const std::string& message) override;

 protected:
  void do_all_reduce(const Tensor& buf, ReduceOp op) override;
  void do_all_gather(const Tensor& send, const Tensor& recv) override;
  void do_all_gather_v(const Tensor& send, const Tensor& recv,
                       const std::vector<int64_t>& counts) override;
  void do_broadcast(const Tensor& buf, int root) override;
  void do_barrier() override {}
  CommHandle do_iall_reduce(const Tensor& buf, ReduceOp op) override;
  CommHandle do_iall_gather_v(const Tensor& send, const Tensor& recv,
                              const std::vector<int64_t>& counts) override;

 private:
  Device device_;
};

}  // namespace depbloom::dist
