// The MPI communicator: MPI_COMM_WORLD duplicated with errors returned, collectives on
// host memory, CUDA tensors staged through pooled host buffers (copy on the backend's
// current stream, synchronize, communicate, copy back).
#include "dist/mpi/mpi_communicator.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/mpi_check.h"
#include "dist/backends.h"

namespace depbloom::dist {

// ---- MpiEnvironment ----------------------------------------------------------------------

MpiEnvironment& MpiEnvironment::instance() {
  static MpiEnvironment env;
  return env;
}

MpiEnvironment::MpiEnvironment() {
  int initialized = 0;
  DB_CHECK_MPI(MPI_Initialized(&initialized));
  if (initialized) {
    DB_CHECK_MPI(MPI_Query_thread(&thread_level_));
  } else {
    DB_CHECK_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &thread_level_));
    owns_ = true;
  }
  DB_ASSERT(thread_level_ >= MPI_THREAD_FUNNELED,
            "MPI provides thread level {}, DepBloom needs MPI_THREAD_FUNNELED ({})", thread_level_,
            MPI_THREAD_FUNNELED);
}

bool MpiEnvironment::finalized() {
  int f = 0;
  MPI_Finalized(&f);
  return f != 0;
}

MpiEnvironment::~MpiEnvironment() {
  // After an abort, MPI_Finalize would wait for ranks that are gone or hung.
  if (!owns_ || finalized() || detail::aborting()) return;
  int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS)
    std::fprintf(stderr, "depbloom: MPI_Finalize failed: %s\n", mpi_error_text(rc).c_str());
}

// ---- HostStagingPool ---------------------------------------------------------------------

HostStagingPool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->slots_[slot_]->busy = false;
}
HostStagingPool::Lease& HostStagingPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    if (pool_ != nullptr) pool_->slots_[slot_]->busy = false;
    pool_ = std::exchange(o.pool_, nullptr);
    slot_ = o.slot_;
  }
  return *this;
}
void* HostStagingPool::Lease::at(size_t offset) const {
  return static_cast<char*>(pool_->slots_[slot_]->buffer.data()) + offset;
}

HostStagingPool::Lease HostStagingPool::acquire(size_t bytes) {
  size_t pick = slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i]->busy) continue;
    if (pick == slots_.size() || slots_[i]->buffer.bytes() > slots_[pick]->buffer.bytes()) pick = i;
  }
  if (pick == slots_.size()) slots_.push_back(std::make_unique<Slot>());
  Slot& s = *slots_[pick];
  if (s.buffer.bytes() < bytes) {
    s.buffer = Buffer();  // free first: the old contents are not needed
    s.buffer = Buffer(bytes, Device::cpu());
  }
  s.busy = true;
  return Lease(this, pick);
}

// ---- helpers -----------------------------------------------------------------------------

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

int mpi_count(int64_t n, const char* op) {
  DB_ASSERT(n <= INT_MAX, "{}: {} elements exceed MPI's int count; split the collective", op, n);
  return static_cast<int>(n);
}

size_t round_up(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

void scale_host(const Tensor& h, double factor) {
  if (h.dtype() == DType::f32) {
    float* p = h.data<float>();
    const float f = static_cast<float>(factor);
    for (int64_t i = 0; i < h.numel(); ++i) p[i] *= f;
  } else {
    double* p = h.data<double>();
    for (int64_t i = 0; i < h.numel(); ++i) p[i] *= factor;
  }
}

// Stream-ordered copies on the backend's current stream, then wait for them: MPI reads and
// writes host memory only when the copies are done.
void device_to_host(const Tensor& host, const Tensor& dev) {
  if (dev.empty()) return;
  ops::copy(host, dev);
  backend::synchronize(dev.device().index);
}
void host_to_device(const Tensor& dev, const Tensor& host) {
  if (dev.empty()) return;
  ops::copy(dev, host);
  backend::synchronize(dev.device().index);
}

Tensor host_view(const HostStagingPool::Lease& lease, size_t offset, const Tensor& like) {
  return Tensor(lease.at(offset), like.dtype(), like.flat().shape(), Device::cpu());
}

// Displacements (in elements) of an all-gather-v, as MPI's ints.
void counts_and_displs(const std::vector<int64_t>& counts, std::vector<int>* c, std::vector<int>* d,
                       const char* op) {
  c->resize(counts.size());
  d->resize(counts.size());
  int64_t off = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    (*c)[r] = mpi_count(counts[r], op);
    (*d)[r] = mpi_count(off, op);
    off += counts[r];
  }
  mpi_count(off, op);
}

// One in-flight MPI collective: the request, and what completes it (the mean's scaling,
// the copy of a staged result back to the device, the return of the staging lease).
class MpiPending final : public detail::PendingCollective {
 public:
  MPI_Request request = MPI_REQUEST_NULL;
  HostStagingPool::Lease lease;
  Tensor result_host;  // where MPI writes the result
  Tensor result_dev;   // staged: the device tensor the result goes to
  bool staged = false;
  double scale = 1.0;
  std::vector<int> counts;  // kept alive for MPI_Iallgatherv
  std::vector<int> displs;

  ~MpiPending() override {
    // The handle waits before destroying this; a request still here was never started or
    // its wait failed, so only free what MPI allows.
    if (request != MPI_REQUEST_NULL && !MpiEnvironment::finalized()) {
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
  }
  void wait() override {
    if (done_) return;
    DB_CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    finish();
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    DB_CHECK_MPI(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
    if (flag) finish();
    return flag != 0;
  }

 private:
  void finish() {
    done_ = true;
    if (scale != 1.0) scale_host(result_host, scale);
    if (staged) host_to_device(result_dev, result_host);
    lease = HostStagingPool::Lease();
  }
  bool done_ = false;
};

}  // namespace

// ---- MpiCommunicator ---------------------------------------------------------------------

MpiCommunicator::MpiCommunicator(Device device) : device_(device) {
  MpiEnvironment::instance();
  DB_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  DB_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  DB_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  DB_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  DB_CHECK_MPI(
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_comm_));
  DB_CHECK_MPI(MPI_Comm_set_errhandler(local_comm_, MPI_ERRORS_RETURN));
  DB_CHECK_MPI(MPI_Comm_rank(local_comm_, &local_rank_));
  DB_CHECK_MPI(MPI_Comm_size(local_comm_, &local_size_));
}

MpiCommunicator::~MpiCommunicator() {
  if (MpiEnvironment::finalized()) return;
  if (local_comm_ != MPI_COMM_NULL) MPI_Comm_free(&local_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::do_all_reduce(const Tensor& buf, ReduceOp op) {
  const int n = mpi_count(buf.numel(), "all_reduce");
  const double scale = op == ReduceOp::mean ? 1.0 / size_ : 1.0;
  if (buf.device().is_cpu()) {
    DB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, buf.raw(), n, mpi_type(buf.dtype()), MPI_SUM, comm_));
    if (scale != 1.0) scale_host(buf, scale);
    return;
  }
  HostStagingPool::Lease lease = staging_.acquire(buf.bytes());
  Tensor h = host_view(lease, 0, buf);
  device_to_host(h, buf.flat());
  DB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, h.raw(), n, mpi_type(buf.dtype()), MPI_SUM, comm_));
  if (scale != 1.0) scale_host(h, scale);
  host_to_device(buf.flat(), h);
}

void MpiCommunicator::do_all_gather(const Tensor& send, const Tensor& recv) {
  const int n = mpi_count(send.numel(), "all_gather");
  mpi_count(recv.numel(), "all_gather");
  const MPI_Datatype t = mpi_type(send.dtype());
  if (send.device().is_cpu()) {
    DB_CHECK_MPI(MPI_Allgather(send.raw(), n, t, recv.raw(), n, t, comm_));
    return;
  }
  const size_t send_off = round_up(recv.bytes());
  HostStagingPool::Lease lease = staging_.acquire(send_off + send.bytes());
  Tensor hr = host_view(lease, 0, recv);
  Tensor hs = host_view(lease, send_off, send);
  device_to_host(hs, send.flat());
  DB_CHECK_MPI(MPI_Allgather(hs.raw(), n, t, hr.raw(), n, t, comm_));
  host_to_device(recv.flat(), hr);
}

void MpiCommunicator::do_all_gather_v(const Tensor& send, const Tensor& recv,
                                      const std::vector<int64_t>& counts) {
  std::vector<int> c;
  std::vector<int> d;
  counts_and_displs(counts, &c, &d, "all_gather_v");
  const MPI_Datatype t = mpi_type(send.dtype());
  const int n = c[static_cast<size_t>(rank_)];
  if (send.device().is_cpu()) {
    DB_CHECK_MPI(MPI_Allgatherv(send.raw(), n, t, recv.raw(), c.data(), d.data(), t, comm_));
    return;
  }
  const size_t send_off = round_up(recv.bytes());
  HostStagingPool::Lease lease = staging_.acquire(send_off + send.bytes());
  Tensor hr = host_view(lease, 0, recv);
  Tensor hs = host_view(lease, send_off, send);
  device_to_host(hs, send.flat());
  DB_CHECK_MPI(MPI_Allgatherv(hs.raw(), n, t, hr.raw(), c.data(), d.data(), t, comm_));
  host_to_device(recv.flat(), hr);
}

void MpiCommunicator::do_broadcast(const Tensor& buf, int root) {
  const int n = mpi_count(buf.numel(), "broadcast");
  const MPI_Datatype t = mpi_type(buf.dtype());
  if (buf.device().is_cpu()) {
    DB_CHECK_MPI(MPI_Bcast(buf.raw(), n, t, root, comm_));
    return;
  }
  HostStagingPool::Lease lease = staging_.acquire(buf.bytes());
  Tensor h = host_view(lease, 0, buf);
  if (rank_ == root) device_to_host(h, buf.flat());
  DB_CHECK_MPI(MPI_Bcast(h.raw(), n, t, root, comm_));
  if (rank_ != root) host_to_device(buf.flat(), h);
}

void MpiCommunicator::do_barrier() {
  DB_CHECK_MPI(MPI_Barrier(comm_));
}

CommHandle MpiCommunicator::do_iall_reduce(const Tensor& buf, ReduceOp op) {
  auto p = std::make_unique<MpiPending>();
  const int n = mpi_count(buf.numel(), "iall_reduce");
  p->scale = op == ReduceOp::mean ? 1.0 / size_ : 1.0;
  if (buf.device().is_cpu()) {
    p->result_host = buf;
  } else {
    p->lease = staging_.acquire(buf.bytes());
    p->result_host = host_view(p->lease, 0, buf);
    p->result_dev = buf.flat();
    p->staged = true;
    device_to_host(p->result_host, buf.flat());
  }
  DB_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, p->result_host.raw(), n, mpi_type(buf.dtype()), MPI_SUM,
                              comm_, &p->request));
  return CommHandle(std::move(p));
}

CommHandle MpiCommunicator::do_iall_gather_v(const Tensor& send, const Tensor& recv,
                                             const std::vector<int64_t>& counts) {
  auto p = std::make_unique<MpiPending>();
  counts_and_displs(counts, &p->counts, &p->displs, "iall_gather_v");
  const MPI_Datatype t = mpi_type(send.dtype());
  const int n = p->counts[static_cast<size_t>(rank_)];
  const void* send_ptr = send.raw();
  if (send.device().is_cpu()) {
    p->result_host = recv;
  } else {
    const size_t send_off = round_up(recv.bytes());
    p->lease = staging_.acquire(send_off + send.bytes());
    p->result_host = host_view(p->lease, 0, recv);
    p->result_dev = recv.flat();
    p->staged = true;
    Tensor hs = host_view(p->lease, send_off, send);
    device_to_host(hs, send.flat());
    send_ptr = hs.raw();
  }
  DB_CHECK_MPI(MPI_Iallgatherv(send_ptr, n, t, p->result_host.raw(), p->counts.data(),
                               p->displs.data(), t, comm_, &p->request));
  return CommHandle(std::move(p));
}

// Also called by the watchdog thread while the main thread is blocked inside MPI. Under
// MPI_THREAD_FUNNELED the standard does not sanction that call, but the alternative is a
// rank that waits forever: Open MPI's MPI_Abort only asks the runtime (PMIx, thread-safe)
// to kill the job and exits, and begin_abort's fallback exits anyway should it not return.
void MpiCommunicator::abort(int code, const std::string& message) {
  detail::begin_abort(code);
  detail::print_rank_message(rank_, size_, message);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort returned: leave anyway
}

namespace detail {
std::unique_ptr<Communicator> make_mpi_communicator(Device device) {
  return std::make_unique<MpiCommunicator>(device);
}
}  // namespace detail

}  // namespace depbloom::dist
