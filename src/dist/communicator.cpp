// The Communicator's argument checks and accounting (shared by every implementation),
// CommHandle, the watchdog's hook-up, the launch environment and the factory.
#include "depbloom/dist/communicator.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "depbloom/core/timer.h"
#include "depbloom/dist/local_communicator.h"
#include "depbloom/dist/watchdog.h"
#include "dist/backends.h"

namespace depbloom::dist {

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::all_gather_v:
      return "all_gather_v";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::barrier:
      return "barrier";
  }
  return "?";
}

void CommStats::add(CollectiveKind k, int64_t bytes, bool nonblocking) {
  CollectiveCounts& c = (*this)[k];
  c.calls += 1;
  c.nonblocking += nonblocking ? 1 : 0;
  c.bytes += bytes;
}
int64_t CommStats::total_calls() const {
  int64_t n = 0;
  for (const auto& c : by_kind) n += c.calls;
  return n;
}
int64_t CommStats::total_bytes() const {
  int64_t n = 0;
  for (const auto& c : by_kind) n += c.bytes;
  return n;
}

CommHandle::~CommHandle() {
  if (op_ == nullptr) return;
  try {
    Watchdog::Scope guard(op_->watchdog, op_->what, op_->seq);
    op_->wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "depbloom: a collective dropped without wait() failed: %s\n", e.what());
  }
}
CommHandle& CommHandle::operator=(CommHandle&& o) noexcept {
  if (this != &o) {
    CommHandle old(std::move(*this));  // completes the collective this handle held
    op_ = std::move(o.op_);
  }
  return *this;
}
void CommHandle::wait() {
  if (op_ == nullptr) return;
  {
    Watchdog::Scope guard(op_->watchdog, op_->what, op_->seq);
    op_->wait();
  }
  op_.reset();
}
bool CommHandle::test() {
  if (op_ == nullptr) return true;
  if (!op_->test()) return false;
  op_.reset();
  return true;
}

Communicator::Communicator() = default;
Communicator::~Communicator() = default;

void Communicator::set_timeout(double seconds) {
  DB_ASSERT(seconds >= 0, "communicator timeout must be >= 0 s, got {}", seconds);
  watchdog_.reset();
  // A lone rank waits for nobody.
  if (seconds == 0 || size() <= 1) return;
  watchdog_ = std::make_unique<Watchdog>(seconds, [this, seconds](const char* what, int64_t seq,
                                                                  double waited) {
    abort(kTimeoutExitCode,
          fmt::format("timed out: waited {:.1f} s in {} (collective #{} on this rank) for a rank "
                      "that never joined it; a rank stopped making progress (hung, stuck in a "
                      "loop or stopped), so every rank ends (limit: dist.timeout_s = {} s)",
                      waited, what, seq, seconds));
  });
  if (auto probe = device_probe()) watchdog_->set_probe(std::move(probe));
}

double Communicator::timeout() const {
  return watchdog_ != nullptr ? watchdog_->timeout() : 0.0;
}

int64_t Communicator::begin_collective() {
  const int64_t seq = ++seq_;
  // For the hung-rank test (tests/CMakeLists.txt): this rank stops making progress before
  // its 10th collective (in the first training steps of depbloom-train), as a rank stuck
  // in a loop would, so that the others' watchdogs must end the run.
  if (test_hang_rank_ == -2) {
    const char* v = std::getenv("DEPBLOOM_TEST_HANG_RANK");
    test_hang_rank_ = v != nullptr && *v != '\0' ? std::atoi(v) : -1;
  }
  if (test_hang_rank_ == rank() && seq >= 10) {
    detail::print_rank_message(
        rank(), size(),
        fmt::format("hanging on purpose (DEPBLOOM_TEST_HANG_RANK={}) before collective #{}",
                    test_hang_rank_, seq));
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  return seq;
}

void Communicator::watch(CommHandle& h, const char* what, int64_t seq) const {
  if (h.op_ == nullptr) return;
  h.op_->watchdog = watchdog_.get();
  h.op_->what = what;
  h.op_->seq = seq;
}

void Communicator::check_all_reduce(const char* op, const Tensor& buf) const {
  DB_ASSERT(buf.defined(), "{}: buffer {} has no data", op, buf.str());
  DB_ASSERT(is_floating(buf.dtype()), "{}: {} communicator reduces f32 or f64, got {}", op, name(),
            buf.str());
}

void Communicator::check_all_gather_v(const char* op, const Tensor& send, const Tensor& recv,
                                      const std::vector<int64_t>& counts) const {
  DB_ASSERT(send.defined() && recv.defined(), "{}: send {} or recv {} has no data", op, send.str(),
            recv.str());
  DB_ASSERT(send.dtype() == recv.dtype(), "{}: send {} and recv {} differ in dtype", op, send.str(),
            recv.str());
  DB_ASSERT(send.device() == recv.device(), "{}: send {} and recv {} are on different devices", op,
            send.str(), recv.str());
  DB_ASSERT(static_cast<int>(counts.size()) == size(), "{}: {} counts for {} ranks", op,
            counts.size(), size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    DB_ASSERT(counts[r] >= 0, "{}: count of rank {} is negative ({})", op, r, counts[r]);
    total += counts[r];
  }
  DB_ASSERT(counts[static_cast<size_t>(rank())] == send.numel(),
            "{}: rank {} sends {} ({} elements) but its count says {}", op, rank(), send.str(),
            send.numel(), counts[static_cast<size_t>(rank())]);
  DB_ASSERT(recv.numel() == total, "{}: recv {} holds {} elements, the counts sum to {}", op,
            recv.str(), recv.numel(), total);
}

void Communicator::all_reduce(const Tensor& buf, ReduceOp op) {
  check_all_reduce("all_reduce", buf);
  const int64_t seq = begin_collective();
  const Stopwatch watch;
  {
    Watchdog::Scope guard(watchdog_.get(), "all_reduce", seq);
    do_all_reduce(buf, op);
  }
  stats_.wait_seconds += watch.seconds();
  stats_.add(CollectiveKind::all_reduce, static_cast<int64_t>(buf.bytes()), false);
}

void Communicator::all_gather(const Tensor& send, const Tensor& recv) {
  DB_ASSERT(send.defined() && recv.defined(), "all_gather: send {} or recv {} has no data",
            send.str(), recv.str());
  DB_ASSERT(send.dtype() == recv.dtype(), "all_gather: send {} and recv {} differ in dtype",
            send.str(), recv.str());
  DB_ASSERT(send.device() == recv.device(),
            "all_gather: send {} and recv {} are on different devices", send.str(), recv.str());
  DB_ASSERT(recv.numel() == send.numel() * size(),
            "all_gather: recv {} must hold {} ranks x {} elements", recv.str(), size(),
            send.numel());
  const int64_t seq = begin_collective();
  const Stopwatch watch;
  {
    Watchdog::Scope guard(watchdog_.get(), "all_gather", seq);
    do_all_gather(send, recv);
  }
  stats_.wait_seconds += watch.seconds();
  stats_.add(CollectiveKind::all_gather, static_cast<int64_t>(recv.bytes()), false);
}

void Communicator::all_gather_v(const Tensor& send, const Tensor& recv,
                                const std::vector<int64_t>& counts) {
  check_all_gather_v("all_gather_v", send, recv, counts);
  const int64_t seq = begin_collective();
  const Stopwatch watch;
  {
    Watchdog::Scope guard(watchdog_.get(), "all_gather_v", seq);
    do_all_gather_v(send, recv, counts);
  }
  stats_.wait_seconds += watch.seconds();
  stats_.add(CollectiveKind::all_gather_v, static_cast<int64_t>(recv.bytes()), false);
}

void Communicator::broadcast(const Tensor& buf, int root) {
  DB_ASSERT(buf.defined(), "broadcast: buffer {} has no data", buf.str());
  DB_ASSERT(root >= 0 && root < size(), "broadcast: root {} is not a rank of {}", root, size());
  const int64_t seq = begin_collective();
  const Stopwatch watch;
  {
    Watchdog::Scope guard(watchdog_.get(), "broadcast", seq);
    do_broadcast(buf, root);
  }
  stats_.wait_seconds += watch.seconds();
  stats_.add(CollectiveKind::broadcast, static_cast<int64_t>(buf.bytes()), false);
}

void Communicator::barrier() {
  const int64_t seq = begin_collective();
  const Stopwatch watch;
  {
    Watchdog::Scope guard(watchdog_.get(), "barrier", seq);
    do_barrier();
  }
  stats_.wait_seconds += watch.seconds();
  stats_.add(CollectiveKind::barrier, 0, false);
}

CommHandle Communicator::iall_reduce(const Tensor& buf, ReduceOp op) {
  check_all_reduce("iall_reduce", buf);
  const int64_t seq = begin_collective();
  CommHandle h;
  {
    // Starting may block too (staging copies; some MPI libraries synchronise here).
    Watchdog::Scope guard(watchdog_.get(), "iall_reduce", seq);
    h = do_iall_reduce(buf, op);
  }
  watch(h, "iall_reduce (its wait)", seq);
  stats_.add(CollectiveKind::all_reduce, static_cast<int64_t>(buf.bytes()), true);
  return h;
}

CommHandle Communicator::iall_gather_v(const Tensor& send, const Tensor& recv,
                                       const std::vector<int64_t>& counts) {
  check_all_gather_v("iall_gather_v", send, recv, counts);
  const int64_t seq = begin_collective();
  CommHandle h;
  {
    Watchdog::Scope guard(watchdog_.get(), "iall_gather_v", seq);
    h = do_iall_gather_v(send, recv, counts);
  }
  watch(h, "iall_gather_v (its wait)", seq);
  stats_.add(CollectiveKind::all_gather_v, static_cast<int64_t>(recv.bytes()), true);
  return h;
}

std::vector<int64_t> Communicator::all_gather_counts(int64_t count) {
  std::vector<int64_t> counts(static_cast<size_t>(size()));
  int64_t mine = count;
  all_gather(Tensor::wrap(&mine, Shape(1)), Tensor::wrap(counts.data(), Shape(size())));
  return counts;
}

namespace {
// The first of `names` set in the environment, as an int; `fallback` when none is.
int env_int(std::initializer_list<const char*> names, int fallback, bool* found = nullptr) {
  for (const char* n : names) {
    const char* v = std::getenv(n);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && x >= 0) {
      if (found != nullptr) *found = true;
      return static_cast<int>(x);
    }
  }
  return fallback;
}
}  // namespace

LaunchEnv launch_env() {
  LaunchEnv e;
  bool has_size = false;
  e.size = env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 1,
                   &has_size);
  bool has_rank = false;
  e.rank = env_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"}, 0,
                   &has_rank);
  // SLURM_NTASKS alone (an allocation, not an MPI launch) does not count.
  e.under_mpirun = has_rank;
  if (!e.under_mpirun) return LaunchEnv{};
  if (!has_size) e.size = e.rank + 1;
  e.local_rank =
      env_int({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"}, 0);
  e.local_size =
      env_int({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"}, 1);
  return e;
}

bool launched_by_mpirun() {
  return launch_env().under_mpirun;
}

bool built_with_mpi() {
  return DEPBLOOM_WITH_MPI != 0;
}
const NameTable<CommunicatorKind>& communicator_kind_names() {
  static const NameTable<CommunicatorKind> names{{CommunicatorKind::local, "local"},
                                                 {CommunicatorKind::mpi, "mpi"},
                                                 {CommunicatorKind::nccl, "nccl"}};
  return names;
}

bool built_with_nccl() {
  return DEPBLOOM_WITH_NCCL != 0;
}

std::string auto_communicator_kind(Device device) {
  LaunchEnv env = launch_env();
  if (!env.under_mpirun || env.size <= 1) return "local";
  if (device.is_cuda() && built_with_nccl()) return "nccl";
  return "mpi";
}

std::unique_ptr<Communicator> make_communicator(const std::string& kind, Device device) {
  if (kind == "auto") return make_communicator(auto_communicator_kind(device), device);
  if (kind == "local") {
    LaunchEnv env = launch_env();
    if (env.size > 1)
      DB_THROW(config,
               "dist.communicator: local serves one rank, but mpirun started {} (use mpi or nccl)",
               env.size);
    return std::make_unique<LocalCommunicator>(device);
  }
  if (kind == "mpi") {
#if DEPBLOOM_WITH_MPI
    return detail::make_mpi_communicator(device);
#else
    DB_THROW(config, "dist.communicator: mpi, but DepBloom was built without MPI");
#endif
  }
  if (kind == "nccl") {
    if (!device.is_cuda())
      DB_THROW(config, "dist.communicator: nccl needs a CUDA device, got {}", device.str());
#if DEPBLOOM_WITH_NCCL
    return detail::make_nccl_communicator();
#else
    DB_THROW(config, "dist.communicator: nccl, but DepBloom was built without NCCL (and MPI)");
#endif
  }
  DB_THROW(config,
           "dist.communicator: unknown communicator '{}' (expected local, mpi, nccl or auto)",
           kind);
}

namespace detail {
void print_rank_message(int rank, int size, const std::string& message) noexcept {
  std::fprintf(stderr, "[rank %d/%d] %s\n", rank, size, message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
}

namespace {
std::atomic<bool> g_aborting{false};
}

void begin_abort(int code) noexcept {
  if (g_aborting.exchange(true)) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  try {
    std::thread([code] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::_Exit(code);
    }).detach();
  } catch (...) {  // no thread: the library's abort alone then
  }
}

bool aborting() noexcept {
  return g_aborting.load();
}
}  // namespace detail

}  // namespace depbloom::dist
