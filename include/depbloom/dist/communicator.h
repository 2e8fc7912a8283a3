// Communicator: the one interface through which ranks exchange tensors (all-reduce,
// all-gather, all-gather-v, broadcast, barrier, and non-blocking forms), with per-kind call
// and byte counts for the trainer's accounting. Implementations: local (one rank), MPI (CPU
// ranks; CUDA tensors staged through reused host buffers) and NCCL (one GPU per rank,
// bootstrapped over MPI). This header needs neither mpi.h nor nccl.h.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/core/name_table.h"
#include "depbloom/core/tensor.h"
#include "depbloom/dist/watchdog.h"

namespace depbloom::dist {

enum class CommunicatorKind : uint8_t { local, mpi, nccl };
const NameTable<CommunicatorKind>& communicator_kind_names();  // "local", "mpi", "nccl"

enum class ReduceOp : uint8_t { sum, mean };

// The collective kinds that CommStats counts separately.
enum class CollectiveKind : uint8_t { all_reduce, all_gather, all_gather_v, broadcast, barrier };
constexpr int kNumCollectiveKinds = 5;
const char* collective_name(CollectiveKind kind);  // "all_reduce", ...

// Calls and bytes of one collective kind. `bytes` is the payload each rank ends up holding:
// the buffer for all-reduce and broadcast, the whole gathered result for all-gather(-v),
// nothing for a barrier. It is the same on every rank. `nonblocking` counts the calls among
// `calls` that were made through the i* forms (overlappable, off the critical path).
struct CollectiveCounts {
  int64_t calls = 0;
  int64_t nonblocking = 0;
  int64_t bytes = 0;
};

struct CommStats {
  std::array<CollectiveCounts, kNumCollectiveKinds> by_kind{};
  // Seconds this rank spent inside blocking collectives (waiting for its peers included):
  // the collectives' share of the critical path. Not part of a forecast.
  double wait_seconds = 0;

  const CollectiveCounts& operator[](CollectiveKind k) const {
    return by_kind[static_cast<size_t>(k)];
  }
  CollectiveCounts& operator[](CollectiveKind k) { return by_kind[static_cast<size_t>(k)]; }
  void add(CollectiveKind k, int64_t bytes, bool nonblocking);
  int64_t total_calls() const;
  int64_t total_bytes() const;
  void reset() { by_kind = {}, wait_seconds = 0; }
};

namespace detail {
// One in-flight non-blocking collective. wait() completes it (idempotent); test() says
// whether it has completed without blocking (and completes it when it has).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;

  // Set by the communicator that started it: the watchdog that bounds wait() (none: no
  // limit) and the collective's name and number for its report.
  Watchdog* watchdog = nullptr;
  const char* what = "";
  int64_t seq = 0;
};
}  // namespace detail

// The handle of a non-blocking collective. Move-only; wait() before reading or reusing the
// buffers. For NCCL, wait() orders the caller's current stream after the collective (no host
// synchronisation). A handle dropped without wait() waits in its destructor and logs (never
// throws) a failure. Every handle must be done before its communicator is destroyed.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(std::unique_ptr<detail::PendingCollective> op) : op_(std::move(op)) {}
  ~CommHandle();
  CommHandle(CommHandle&&) noexcept = default;
  CommHandle& operator=(CommHandle&& o) noexcept;
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;

  void wait();
  bool test();
  bool done() const { return op_ == nullptr; }

 private:
  friend class Communicator;  // attaches its watchdog to the handles it returns
  std::unique_ptr<detail::PendingCollective> op_;
};

// Every rank calls the same collectives in the same order with the same sizes, dtypes and
// roots. Arguments are checked at entry (dtype, sizes, counts, root); a library failure
// throws depbloom::Error with the library's own message. Buffers are views owned by the
// caller. For CUDA tensors the blocking forms are stream-ordered on NCCL (queued on the
// backend's current stream; later ops on that stream see the result) and complete before
// return on MPI and local. A communicator is used by one thread (the one that created it;
// MPI runs with MPI_THREAD_FUNNELED), apart from its watchdog (set_timeout).
class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank and rank count among the ranks on this machine (NCCL: the GPU is local rank modulo
  // the visible GPUs).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual CommunicatorKind kind() const = 0;
  const char* name() const { return communicator_kind_names().name(kind()); }
  // The device this rank computes on (for NCCL: cuda:<local rank mod visible GPUs>).
  virtual Device device() const = 0;

  // In place on `buf` (f32 or f64): every rank ends with the element-wise sum (or mean).
  void all_reduce(const Tensor& buf, ReduceOp op = ReduceOp::sum);
  // recv holds size() * send.numel() elements: rank r's send at offset r * send.numel().
  void all_gather(const Tensor& send, const Tensor& recv);
  // Variable sizes: counts[r] elements from rank r (any may be 0; the same vector on every
  // rank; counts[rank()] == send.numel()), concatenated in rank order into recv, which holds
  // their sum. Any dtype (f32, f64, i32, i64, u8).
  void all_gather_v(const Tensor& send, const Tensor& recv, const std::vector<int64_t>& counts);
  // root's `buf` copied into every rank's `buf`. Any dtype.
  void broadcast(const Tensor& buf, int root);
  // Every rank waits until all have arrived (and, on NCCL, their queued collectives ran).
  void barrier();

  // Non-blocking forms: the buffers must stay untouched until the handle's wait().
  CommHandle iall_reduce(const Tensor& buf, ReduceOp op = ReduceOp::sum);
  CommHandle iall_gather_v(const Tensor& send, const Tensor& recv,
                           const std::vector<int64_t>& counts);

  // Every rank's element count in rank order, from one small all-gather (for callers whose
  // plan does not already know the sizes of an all-gather-v). Counted as an all_gather.
  std::vector<int64_t> all_gather_counts(int64_t count);

  // Brings every rank down with exit status `code` after printing `message` with this
  // rank's id on stderr (MPI_Abort; NCCL aborts its communicator first). Never returns.
  [[noreturn]] virtual void abort(int code, const std::string& message) = 0;

  // Bounds every wait of this rank in a collective (a blocking call, or a handle's wait()):
  // when one lasts `seconds`, a watchdog thread calls abort(kTimeoutExitCode, ...) naming
  // this rank and the collective, because a peer that never arrives (hung, stuck in a loop,
  // stopped) raises no error and would leave every other rank waiting forever. abort() is
  // then called off the communicator's thread; the process ends there. 0 (the default):
  // no limit. Set it on the communicator's thread with no collective in flight (no handle
  // pending: a handle keeps the watchdog it started with). test() is never bounded.
  void set_timeout(double seconds);
  double timeout() const;
  static constexpr int kTimeoutExitCode = 4;  // depbloom's runtime-error code

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_.reset(); }

 protected:
  Communicator();  // out of line: the watchdog's type is complete only there

  // Called with checked arguments. Implementations copy recv's own part themselves.
  virtual void do_all_reduce(const Tensor& buf, ReduceOp op) = 0;
  virtual void do_all_gather(const Tensor& send, const Tensor& recv) = 0;
  virtual void do_all_gather_v(const Tensor& send, const Tensor& recv,
                               const std::vector<int64_t>& counts) = 0;
  virtual void do_broadcast(const Tensor& buf, int root) = 0;
  virtual void do_barrier() = 0;
  virtual CommHandle do_iall_reduce(const Tensor& buf, ReduceOp op) = 0;
  virtual CommHandle do_iall_gather_v(const Tensor& send, const Tensor& recv,
                                      const std::vector<int64_t>& counts) = 0;

  // For implementations whose collectives finish on a device after the call returns: the
  // watchdog's probe of them (see Watchdog::set_probe); none by default.
  virtual std::function<bool(Watchdog::Unfinished*)> device_probe() { return {}; }
  // Whether a timeout is set (a watchdog runs); the number of the collective in progress.
  bool watched() const { return watchdog_ != nullptr; }
  int64_t collective_seq() const { return seq_; }
  // Stops the watchdog: an implementation's destructor calls it before its probe's state goes.
  void stop_watchdog() { watchdog_.reset(); }

 private:
  void check_all_reduce(const char* op, const Tensor& buf) const;
  void check_all_gather_v(const char* op, const Tensor& send, const Tensor& recv,
                          const std::vector<int64_t>& counts) const;
  // Numbers the collective about to start (for the watchdog's report) and runs the
  // DEPBLOOM_TEST_HANG_RANK hook. Returns its number.
  int64_t begin_collective();
  // Attaches the watchdog to a non-blocking collective's handle.
  void watch(CommHandle& h, const char* what, int64_t seq) const;

  CommStats stats_;
  std::unique_ptr<Watchdog> watchdog_;
  int64_t seq_ = 0;          // collectives started on this rank, all kinds
  int test_hang_rank_ = -2;  // -2: DEPBLOOM_TEST_HANG_RANK not read yet; -1: unset
};

// Where this process was started: by mpirun/mpiexec (Open MPI, MPICH/PMI, PMIx, MVAPICH
// environment variables) or alone. Read from the environment, before MPI starts, so a rank
// can pick its GPU first.
struct LaunchEnv {
  bool under_mpirun = false;
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
};
LaunchEnv launch_env();
bool launched_by_mpirun();

// What was compiled in.
bool built_with_mpi();
bool built_with_nccl();

// kind "local", "mpi", "nccl", or "auto": local when not under mpirun (or one rank),
// otherwise nccl for a CUDA device when NCCL was built in, else mpi. For nccl the rank's GPU
// is cuda:<local rank mod visible GPUs> whatever device.index says; for mpi and local it is
// `device`. An unknown kind or one not compiled in is an error naming it.
std::unique_ptr<Communicator> make_communicator(const std::string& kind, Device device);
// The kind "auto" resolves to.
std::string auto_communicator_kind(Device device);

}  // namespace depbloom::dist
