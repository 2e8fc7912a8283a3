// Internal: MPI's process-wide start/stop guard and the MPI communicator. CPU tensors go to
// MPI directly; CUDA tensors are staged through host buffers that a pool keeps and reuses
// (they only grow). Not a public header: it includes mpi.h.
#pragma once

#include <mpi.h>

#include <memory>
#include <utility>
#include <vector>

#include "depbloom/core/memory.h"
#include "depbloom/dist/communicator.h"

namespace depbloom::dist {

// Starts MPI once per process (MPI_Init_thread, MPI_THREAD_FUNNELED: only the thread that
// started MPI calls it) and finalizes it at exit when it was the one that started it.
class MpiEnvironment {
 public:
  static MpiEnvironment& instance();
  int thread_level() const { return thread_level_; }
  static bool finalized();
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

 private:
  MpiEnvironment();
  bool owns_ = false;
  int thread_level_ = MPI_THREAD_SINGLE;
};

// Host buffers for staging CUDA tensors. A lease holds one buffer until it is destroyed;
// buffers are kept and reused by later leases (reallocated only to grow), so a steady
// training step allocates nothing. One lease per in-flight collective.
class HostStagingPool {
 public:
  class Lease {
   public:
    Lease() = default;
    Lease(HostStagingPool* pool, size_t slot) : pool_(pool), slot_(slot) {}
    ~Lease();
    Lease(Lease&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)), slot_(o.slot_) {}
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Host memory at `offset` bytes into the buffer.
    void* at(size_t offset) const;

   private:
    HostStagingPool* pool_ = nullptr;
    size_t slot_ = 0;
  };

  Lease acquire(size_t bytes);

 private:
  struct Slot {
    Buffer buffer;
    bool busy = false;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
};

class MpiCommunicator final : public Communicator {
 public:
  // A duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so failures reach DB_CHECK_MPI.
  explicit MpiCommunicator(Device device = Device::cpu());
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  CommunicatorKind kind() const override { return CommunicatorKind::mpi; }
  Device device() const override { return device_; }
  MPI_Comm comm() const { return comm_; }
  [[noreturn]] void abort(int code, const std::string& message) override;

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

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm local_comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  Device device_;
  HostStagingPool staging_;
};

}  // namespace depbloom::dist
