// The NCCL communicator (CUDA builds with NCCL and MPI): bootstrap over MPI, collectives on
// the backend's current stream, non-blocking forms on a communication stream ordered by
// events, all-gather-v as one group of broadcasts, asynchronous errors polled in waits.
#include "dist/nccl/nccl_communicator.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "depbloom/backend/cuda_stream.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/nccl_check.h"
#include "dist/backends.h"

namespace depbloom::dist {

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
      return ncclUint8;
  }
  return ncclUint8;
}

// One non-blocking collective queued on the communication stream; `done` is recorded after
// it. wait() makes the caller's current stream wait for `done` (device-side); the watchdog's
// probe watches it until it finishes (track()), so a wait that never ends still times out.
class NcclPending final : public detail::PendingCollective {
 public:
  NcclPending(NcclCommunicator* comm, cudaEvent_t done, int device)
      : comm_(comm), done_event_(done), device_(device) {}
  ~NcclPending() override { comm_->release_event(done_event_); }
  void wait() override {
    if (done_) return;
    comm_->check_async_error();
    DB_CHECK_CUDA(cudaStreamWaitEvent(backend::enter_device(device_), done_event_, 0));
    done_ = true;
  }
  bool test() override {
    if (done_) return true;
    cudaError_t e = cudaEventQuery(done_event_);
    if (e == cudaErrorNotReady) {
      comm_->check_async_error();
      return false;
    }
    DB_CHECK_CUDA(e);
    wait();
    return true;
  }

 private:
  NcclCommunicator* comm_;
  cudaEvent_t done_event_;
  int device_;
  bool done_ = false;
};

// This rank's GPU as "host/PCI bus id" in a fixed-size record ("" when it has none).
constexpr size_t kGpuKeyBytes = 320;
std::array<char, kGpuKeyBytes> gpu_key(int device, bool has_gpu) {
  std::array<char, kGpuKeyBytes> key{};
  if (!has_gpu) return key;
  char host[256] = {};
  char bus[32] = {};
  gethostname(host, sizeof host - 1);
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return key;
  std::snprintf(key.data(), key.size(), "%s/%s", host, bus);
  return key;
}

// NCCL refuses two ranks on one GPU, deep in its init; comparing every rank's GPU first gives
// every rank the same clear refusal. Empty when this rank's GPU is its own.
std::string shared_gpu_problem(MpiCommunicator& mpi, int device, bool has_gpu) {
  const auto mine = gpu_key(device, has_gpu);
  std::vector<char> all(kGpuKeyBytes * static_cast<size_t>(mpi.size()));
  mpi.all_gather(Tensor(const_cast<char*>(mine.data()), DType::u8, Shape(kGpuKeyBytes)),
                 Tensor(all.data(), DType::u8, Shape(static_cast<int64_t>(all.size()))));
  for (int r = 0; r < mpi.size(); ++r) {
    const char* other = all.data() + kGpuKeyBytes * static_cast<size_t>(r);
    if (r != mpi.rank() && mine[0] != '\0' && std::strncmp(mine.data(), other, kGpuKeyBytes) == 0)
      return fmt::format(
          "rank {} and rank {} share GPU {}; NCCL needs one GPU per rank: start at most one rank "
          "per GPU, or use the mpi communicator",
          mpi.rank(), r, mine.data());
  }
  return {};
}

}  // namespace

NcclCommunicator::NcclCommunicator() : mpi_(std::make_unique<MpiCommunicator>(Device::cpu())) {
  // Local rank modulo the visible GPUs: with one GPU per node for each rank it is the local
  // rank; where the launcher shows each rank only its own GPU (srun --gpus-per-task=1,
  // CUDA_VISIBLE_DEVICES per rank) every rank takes its one visible device, cuda:0.
  const int gpus = backend::cuda_device_count();
  device_ = gpus > 0 ? mpi_->local_rank() % gpus : 0;
  // Every rank says whether it can take part before any of them enters NCCL's init (which
  // would wait forever for a rank that gave up): a GPU of its own, and on rank 0 the id.
  std::string problem = shared_gpu_problem(*mpi_, device_, gpus > 0);
  if (gpus == 0) {
    problem = fmt::format(
        "local rank {} sees no GPU; NCCL needs one GPU per rank (use the mpi communicator)",
        mpi_->local_rank());
  }
  ncclUniqueId id{};
  if (problem.empty() && mpi_->rank() == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      problem = fmt::format("ncclGetUniqueId failed: {}", ncclGetErrorString(r));
  }
  int32_t ok = problem.empty() ? 1 : 0;
  std::vector<int32_t> oks(static_cast<size_t>(mpi_->size()));
  mpi_->all_gather(Tensor::wrap(&ok, Shape(1)), Tensor::wrap(oks.data(), Shape(mpi_->size())));
  for (int r = 0; r < mpi_->size(); ++r) {
    if (oks[static_cast<size_t>(r)] != 0) continue;
    if (r == mpi_->rank()) DB_THROW(runtime, "nccl communicator on rank {}: {}", r, problem);
    DB_THROW(runtime, "nccl communicator: rank {} could not start (see its message)", r);
  }
  mpi_->broadcast(Tensor(&id, DType::u8, Shape(static_cast<int64_t>(sizeof id))), 0);
  backend::enter_device(device_);
  DB_CHECK_NCCL(ncclCommInitRank(&comm_, mpi_->size(), id, mpi_->rank()));
  comm_stream_ = CudaStream(device_, true);
  ready_ = CudaEvent(false);
}

NcclCommunicator::~NcclCommunicator() {
  stop_watchdog();  // its thread polls the events and comm_ below
  if (comm_ != nullptr) {
    ncclResult_t r = ncclCommDestroy(comm_);
    if (r != ncclSuccess)
      std::fprintf(stderr, "depbloom: ncclCommDestroy failed: %s\n", ncclGetErrorString(r));
  }
  for (cudaEvent_t e : all_events_) cudaEventDestroy(e);
  for (cudaEvent_t e : track_events_) cudaEventDestroy(e);
}

void NcclCommunicator::check_async_error() const {
  ncclResult_t async = ncclSuccess;
  DB_CHECK_NCCL(ncclCommGetAsyncError(comm_, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    DB_THROW(runtime, "NCCL asynchronous error on rank {}: {} ({})", mpi_->rank(),
             ncclGetErrorString(async), ncclGetLastError(comm_));
  }
}

void NcclCommunicator::wait_stream(cudaStream_t stream) const {
  backend::count_host_wait();
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) DB_CHECK_CUDA(e);
    check_async_error();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

cudaEvent_t NcclCommunicator::acquire_event() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  DB_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  all_events_.push_back(e);
  return e;
}

void NcclCommunicator::track(cudaStream_t s, const char* what) {
  if (!watched()) return;
  std::lock_guard<std::mutex> lock(queued_mu_);
  cudaEvent_t e = nullptr;
  if (track_free_.empty()) {
    DB_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    track_events_.push_back(e);
  } else {
    e = track_free_.back();
    track_free_.pop_back();
  }
  DB_CHECK_CUDA(cudaEventRecord(e, s));
  queued_.push_back(Queued{e, what, collective_seq(), std::chrono::steady_clock::now()});
}

std::function<bool(Watchdog::Unfinished*)> NcclCommunicator::device_probe() {
  return [this](Watchdog::Unfinished* oldest) { return oldest_unfinished(oldest); };
}

// On the watchdog's thread: a failed peer shows as NCCL's asynchronous error, a stopped one
// as a collective that never finishes (the watchdog times it from when it was queued).
bool NcclCommunicator::oldest_unfinished(Watchdog::Unfinished* oldest) {
  std::lock_guard<std::mutex> lock(queued_mu_);
  if (queued_.empty()) return false;
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
      async != ncclInProgress) {
    abort(kTimeoutExitCode,
          fmt::format("NCCL asynchronous error in {} (collective #{}): {}", queued_.front().what,
                      queued_.front().seq, ncclGetErrorString(async)));
  }
  cudaSetDevice(device_);  // this thread's own device setting, for the queries below
  while (!queued_.empty()) {
    const cudaError_t e = cudaEventQuery(queued_.front().done);
    if (e == cudaErrorNotReady) break;
    if (e != cudaSuccess) {
      abort(kTimeoutExitCode,
            fmt::format("CUDA error after {} (collective #{}): {}", queued_.front().what,
                        queued_.front().seq, cudaGetErrorString(e)));
    }
    track_free_.push_back(queued_.front().done);
    queued_.pop_front();
  }
  if (queued_.empty()) return false;
  oldest->what = queued_.front().what;
  oldest->seq = queued_.front().seq;
  oldest->since = queued_.front().since;
  return true;
}

cudaStream_t NcclCommunicator::stream_for(const Tensor& t, const char* op) const {
  DB_ASSERT(t.device() == Device::cuda(device_),
            "{}: the nccl communicator of rank {} works on cuda:{}, got {}", op, mpi_->rank(),
            device_, t.str());
  return backend::enter_device(device_);
}

cudaStream_t NcclCommunicator::side_stream_after(cudaStream_t current) {
  ready_.record(current);
  ready_.wait_on(comm_stream_.get());
  return comm_stream_.get();
}

void NcclCommunicator::do_all_reduce(const Tensor& buf, ReduceOp op) {
  if (buf.device().is_cpu()) return mpi_->all_reduce(buf, op);
  cudaStream_t s = stream_for(buf, "all_reduce");
  if (buf.empty()) return;  // equal sizes: every rank skips
  check_async_error();
  DB_CHECK_NCCL(ncclAllReduce(buf.raw(), buf.raw(), static_cast<size_t>(buf.numel()),
                              nccl_type(buf.dtype()), op == ReduceOp::mean ? ncclAvg : ncclSum,
                              comm_, s));
  track(s, "all_reduce (queued on the GPU)");
}

void NcclCommunicator::do_all_gather(const Tensor& send, const Tensor& recv) {
  if (send.device().is_cpu()) return mpi_->all_gather(send, recv);
  cudaStream_t s = stream_for(send, "all_gather");
  if (send.empty()) return;
  check_async_error();
  DB_CHECK_NCCL(ncclAllGather(send.raw(), recv.raw(), static_cast<size_t>(send.numel()),
                              nccl_type(send.dtype()), comm_, s));
  track(s, "all_gather (queued on the GPU)");
}

void NcclCommunicator::queue_all_gather_v(const Tensor& send, const Tensor& recv,
                                          const std::vector<int64_t>& counts, cudaStream_t s) {
  // NCCL has no all-gather-v: one broadcast per contributing rank, fused in a group. Every
  // rank holds the same counts, so all skip the same empty contributions.
  const size_t esize = dtype_size(send.dtype());
  char* base = static_cast<char*>(recv.raw());
  DB_CHECK_NCCL(ncclGroupStart());
  size_t offset = 0;
  for (int r = 0; r < size(); ++r) {
    const size_t n = static_cast<size_t>(counts[static_cast<size_t>(r)]);
    if (n == 0) continue;
    void* dst = base + offset * esize;
    const void* src = r == rank() ? send.raw() : dst;
    ncclResult_t res = ncclBroadcast(src, dst, n, nccl_type(send.dtype()), r, comm_, s);
    if (res != ncclSuccess && res != ncclInProgress) {
      ncclGroupEnd();
      DB_CHECK_NCCL(res);
    }
    offset += n;
  }
  DB_CHECK_NCCL(ncclGroupEnd());
}

void NcclCommunicator::do_all_gather_v(const Tensor& send, const Tensor& recv,
                                       const std::vector<int64_t>& counts) {
  if (send.device().is_cpu()) return mpi_->all_gather_v(send, recv, counts);
  cudaStream_t s = stream_for(recv, "all_gather_v");
  check_async_error();
  queue_all_gather_v(send, recv, counts, s);
  track(s, "all_gather_v (queued on the GPU)");
}

void NcclCommunicator::do_broadcast(const Tensor& buf, int root) {
  if (buf.device().is_cpu()) return mpi_->broadcast(buf, root);
  cudaStream_t s = stream_for(buf, "broadcast");
  if (buf.empty()) return;
  check_async_error();
  DB_CHECK_NCCL(ncclBroadcast(buf.raw(), buf.raw(), static_cast<size_t>(buf.numel()),
                              nccl_type(buf.dtype()), root, comm_, s));
  track(s, "broadcast (queued on the GPU)");
}

void NcclCommunicator::do_barrier() {
  wait_stream(backend::enter_device(device_));
  wait_stream(comm_stream_.get());
  mpi_->barrier();
}

CommHandle NcclCommunicator::do_iall_reduce(const Tensor& buf, ReduceOp op) {
  if (buf.device().is_cpu()) return mpi_->iall_reduce(buf, op);
  cudaStream_t current = stream_for(buf, "iall_reduce");
  if (buf.empty()) return CommHandle();
  cudaStream_t s = side_stream_after(current);
  check_async_error();
  DB_CHECK_NCCL(ncclAllReduce(buf.raw(), buf.raw(), static_cast<size_t>(buf.numel()),
                              nccl_type(buf.dtype()), op == ReduceOp::mean ? ncclAvg : ncclSum,
                              comm_, s));
  cudaEvent_t done = acquire_event();
  auto pending = std::make_unique<NcclPending>(this, done, device_);
  DB_CHECK_CUDA(cudaEventRecord(done, s));
  track(s, "iall_reduce (queued on the GPU)");
  return CommHandle(std::move(pending));
}

CommHandle NcclCommunicator::do_iall_gather_v(const Tensor& send, const Tensor& recv,
                                              const std::vector<int64_t>& counts) {
  if (send.device().is_cpu()) return mpi_->iall_gather_v(send, recv, counts);
  cudaStream_t s = side_stream_after(stream_for(recv, "iall_gather_v"));
  check_async_error();
  queue_all_gather_v(send, recv, counts, s);
  cudaEvent_t done = acquire_event();
  auto pending = std::make_unique<NcclPending>(this, done, device_);
  DB_CHECK_CUDA(cudaEventRecord(done, s));
  track(s, "iall_gather_v (queued on the GPU)");
  return CommHandle(std::move(pending));
}

// Also called by the watchdog thread: ncclCommAbort is the documented way to free a thread
// blocked on a communicator from another thread.
void NcclCommunicator::abort(int code, const std::string& message) {
  detail::begin_abort(code);
  detail::print_rank_message(rank(), size(), message);
  if (comm_ != nullptr) ncclCommAbort(comm_);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

namespace detail {
std::unique_ptr<Communicator> make_nccl_communicator() {
  return std::make_unique<NcclCommunicator>();
}
}  // namespace detail

}  // namespace depbloom::dist
