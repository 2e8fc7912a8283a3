// CountingCommunicator: one rank of a P-rank world that exists only to be counted. Its
// collectives move no data; the base class records their calls and bytes in CommStats as for
// a real communicator (all-gather-v's bytes come from its counts), so a strategy's own code,
// run for every rank in one process, counts what a P-rank run will (the forecast,
// train::forecast_strategy). One rank cannot know what the others send, so an all-gather
// returns what answer_gathers() last set: every rank's send, which the caller knows.
#pragma once

#include <vector>

#include "depbloom/dist/communicator.h"

namespace depbloom::dist {

class CountingCommunicator final : public Communicator {
 public:
  CountingCommunicator(int rank, int size, Device device = Device::cpu());

  // What the following all-gathers return: every rank's f64 send, in rank order.
  void answer_gathers(const std::vector<double>& all) { gathered_ = all; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return rank_; }
  int local_size() const override { return size_; }
  // Its ranks live in this process, as the local communicator's one rank does.
  CommunicatorKind kind() const override { return CommunicatorKind::local; }
  Device device() const override { return device_; }
  // Nothing runs on the other ranks, so there is nothing to bring down: a runtime error.
  [[noreturn]] void abort(int code, const std::string& message) override;

 protected:
  void do_all_reduce(const Tensor& /*buf*/, ReduceOp /*op*/) override {}
  void do_all_gather(const Tensor& send, const Tensor& recv) override;
  void do_all_gather_v(const Tensor& /*send*/, const Tensor& /*recv*/,
                       const std::vector<int64_t>& /*counts*/) override {}
  void do_broadcast(const Tensor& /*buf*/, int /*root*/) override {}
  void do_barrier() override {}
  CommHandle do_iall_reduce(const Tensor& /*buf*/, ReduceOp /*op*/) override {
    return CommHandle();
  }
  CommHandle do_iall_gather_v(const Tensor& /*send*/, const Tensor& /*recv*/,
                              const std::vector<int64_t>& /*counts*/) override {
    return CommHandle();
  }

 private:
  int rank_, size_;
  Device device_;
  std::vector<double> gathered_;
};

}  // namespace depbloom::dist
