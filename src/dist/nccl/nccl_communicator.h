// Internal: the NCCL communicator. One process per GPU (local rank modulo the visible GPUs);
// the NCCL unique id is broadcast over an MPI communicator that it also uses for barriers
// and for collectives on CPU tensors. Blocking forms queue on the backend's current
// stream; non-blocking forms run on a communication stream ordered after the current one by
// an event, and wait() orders the current stream after them (no host synchronisation).
// Host-side waits poll ncclCommGetAsyncError so a failed peer becomes an error, not a hang.
// With a timeout, every collective is watched until it finishes on the GPU: an event recorded
// after it, polled with the asynchronous error by the watchdog's thread, which aborts the
// communicator when a collective outlasts dist.timeout_s (the host waits for it elsewhere,
// such as the loss read, beyond the communicator's sight).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "depbloom/core/cuda_resources.h"
#include "dist/mpi/mpi_communicator.h"

namespace depbloom::dist {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator();
  ~NcclCommunicator() override;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int local_rank() const override { return mpi_->local_rank(); }
  int local_size() const override { return mpi_->local_size(); }
  CommunicatorKind kind() const override { return CommunicatorKind::nccl; }
  Device device() const override { return Device::cuda(device_); }
  [[noreturn]] void abort(int code, const std::string& message) override;

  // Throws the communicator's asynchronous error, if NCCL reports one.
  void check_async_error() const;
  // Waits on the host until `stream` is idle, polling the asynchronous error meanwhile.
  void wait_stream(cudaStream_t stream) const;
  // An event from the pool (created once, reused) and its return.
  cudaEvent_t acquire_event();
  void release_event(cudaEvent_t e) { free_events_.push_back(e); }

 protected:
  void do_all_reduce(const Tensor& buf, ReduceOp op) override;
  void do_all_gather(const Tensor& send, const Tensor& recv) override;
  void do_all_gather_v(const Tensor& send, const Tensor& recv,
                       const std::vector<int64_t>& counts) override;
  void do_broadcast(const Tensor& buf, int root) override;
  void do_barrier() override;
  CommHandle do_iall_reduce(const Tensor& buf, ReduceOp op) override;
  CommHandle do_iall_gather_v(const Tensor& send, const Tensor& recv,
                              const std::vector<int64_t>& counts) override;
  std::function<bool(Watchdog::Unfinished*)> device_probe() override;

 private:
  // A collective queued on the GPU and not yet seen finished by the probe.
  struct Queued {
    cudaEvent_t done;
    const char* what;
    int64_t seq;
    std::chrono::steady_clock::time_point since;
  };
  // Watches the collective just queued on `s` until it finishes there (with a timeout set).
  void track(cudaStream_t s, const char* what);
  // The watchdog's probe: drops finished collectives, aborts on an asynchronous NCCL error.
  bool oldest_unfinished(Watchdog::Unfinished* oldest);

  // The current stream of the backend on this rank's GPU, after checking that `t` lives there.
  cudaStream_t stream_for(const Tensor& t, const char* op) const;
  // The communication stream, ordered after everything queued so far on `current`.
  cudaStream_t side_stream_after(cudaStream_t current);
  void queue_all_gather_v(const Tensor& send, const Tensor& recv,
                          const std::vector<int64_t>& counts, cudaStream_t s);

  std::unique_ptr<MpiCommunicator> mpi_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  CudaStream comm_stream_;
  CudaEvent ready_;
  std::vector<cudaEvent_t> all_events_;
  std::vector<cudaEvent_t> free_events_;
  std::mutex queued_mu_;  // the tracking below, shared with the watchdog's thread
  std::deque<Queued> queued_;
  std::vector<cudaEvent_t> track_events_, track_free_;
};

}  // namespace depbloom::dist
