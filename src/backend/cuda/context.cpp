// The per-thread CUDA context declared in cuda_context.h, and backend::synchronize for CUDA
// builds. Everything is thread_local, so no locks: each thread has its own streams, cuBLAS
// handles, workspaces and index-fault records per device, created on first use and released at
// thread exit. Every host wait of the backend goes through wait_stream(), which counts it.
#include "backend/cuda/cuda_context.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "depbloom/backend/runtime.h"
#include "depbloom/core/cuda_resources.h"
#include "depbloom/core/memory.h"
#include "gather_scatter.cuh"

namespace depbloom::backend {
namespace {

struct StreamWorkspace {
  cudaStream_t stream = nullptr;
  Buffer buffer;
};

struct DeviceContext {
  explicit DeviceContext(int d) : device(d) {}
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  ~DeviceContext() {
    // Kernels this thread queued may still use a workspace (on any of its streams): wait
    // for the device before the Buffers are freed. Errors are ignored: the thread is
    // exiting and a destructor must not throw.
    if (!workspaces.empty() && cudaSetDevice(device) == cudaSuccess) cudaDeviceSynchronize();
  }

  cudaStream_t stream() {
    if (override_stream != nullptr) return override_stream;
    if (own.get() == nullptr) own = CudaStream(device, /*non_blocking=*/true);
    return own.get();
  }

  int device;
  CudaStream own;                          // created on first use
  cudaStream_t override_stream = nullptr;  // set_current_stream(); nullptr: use `own`
  CublasHandle cublas;                     // created on first use
  cudaStream_t cublas_stream = nullptr;    // stream the handle is bound to
  bool cublas_bound = false;
  cublasMath_t cublas_math = CUBLAS_DEFAULT_MATH;
  bool cublas_math_set = false;
  // One per stream this thread has run ops on: a workspace is only reused by work queued
  // in order behind its previous user, never concurrently from another stream.
  std::vector<StreamWorkspace> workspaces;
  // The kernels' IndexFault record, and the pinned host copy that each wait reads it into.
  Buffer fault;
  Buffer fault_host;
};

std::atomic<int64_t> g_host_waits{0};

thread_local std::vector<std::unique_ptr<DeviceContext>> t_contexts;

DeviceContext& context(int device) {
  DB_ASSERT(device >= 0, "invalid CUDA device index {}", device);
  auto d = static_cast<size_t>(device);
  if (d >= t_contexts.size()) t_contexts.resize(d + 1);
  if (!t_contexts[d]) t_contexts[d] = std::make_unique<DeviceContext>(device);
  return *t_contexts[d];
}

void make_current(int device) {
  int current = -1;
  DB_CHECK_CUDA(cudaGetDevice(&current));
  if (current != device) DB_CHECK_CUDA(cudaSetDevice(device));
}

}  // namespace

cudaStream_t enter_device(int device) {
  DeviceContext& ctx = context(device);
  make_current(device);
  return ctx.stream();
}

cudaStream_t current_stream(int device) {
  DeviceContext& ctx = context(device);
  if (ctx.override_stream != nullptr || ctx.own.get() != nullptr) return ctx.stream();
  // Creating the own stream switches devices; a getter must leave the current one as it was.
  int previous = -1;
  DB_CHECK_CUDA(cudaGetDevice(&previous));
  cudaStream_t s = ctx.stream();
  if (previous != device) DB_CHECK_CUDA(cudaSetDevice(previous));
  return s;
}

cudaStream_t set_current_stream(int device, cudaStream_t stream) {
  DeviceContext& ctx = context(device);
  return std::exchange(ctx.override_stream, stream);
}

cublasHandle_t cublas_handle(int device) {
  DeviceContext& ctx = context(device);
  make_current(device);
  if (ctx.cublas.get() == nullptr) ctx.cublas = CublasHandle(device);
  cudaStream_t s = ctx.stream();
  if (!ctx.cublas_bound || ctx.cublas_stream != s) {
    DB_CHECK_CUBLAS(cublasSetStream(ctx.cublas.get(), s));
    ctx.cublas_stream = s;
    ctx.cublas_bound = true;
  }
  // DEFAULT_MATH is plain FP32 for SGEMM; TF32 only when asked for (backend::set_tf32).
  cublasMath_t want = tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  if (!ctx.cublas_math_set || ctx.cublas_math != want) {
    DB_CHECK_CUBLAS(cublasSetMathMode(ctx.cublas.get(), want));
    ctx.cublas_math = want;
    ctx.cublas_math_set = true;
  }
  return ctx.cublas.get();
}

void copy_to_device_async(void* dst, const void* pinned_src, size_t bytes, int device) {
  DB_CHECK_CUDA(
      cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice, enter_device(device)));
}

void* workspace(int device, size_t bytes) {
  DeviceContext& ctx = context(device);
  cudaStream_t s = ctx.stream();
  auto it = std::find_if(ctx.workspaces.begin(), ctx.workspaces.end(),
                         [s](const StreamWorkspace& w) { return w.stream == s; });
  if (it == ctx.workspaces.end()) {
    ctx.workspaces.push_back(StreamWorkspace{s, Buffer()});
    it = ctx.workspaces.end() - 1;
  }
  Buffer& buffer = it->buffer;
  if (buffer.bytes() < bytes) {
    // Kernels queued earlier on this stream may still read the old buffer.
    if (buffer.data() != nullptr) wait_stream(device, s);
    constexpr size_t kGranule = size_t{1} << 20;
    size_t grown = std::max(bytes, buffer.bytes() + buffer.bytes() / 2);
    grown = (grown + kGranule - 1) / kGranule * kGranule;
    buffer = Buffer();  // free before allocating: the peak is the new size, not old + new
    buffer = Buffer(grown, Device::cuda(device));
  }
  return buffer.data();
}

kernels::IndexFault* index_fault(int device) {
  DeviceContext& ctx = context(device);
  if (ctx.fault.data() == nullptr) {
    const size_t bytes = sizeof(kernels::IndexFault);
    ctx.fault = Buffer(bytes, Device::cuda(device));
    ctx.fault_host = Buffer(bytes, Device::cpu(), HostMemory::pinned);
    make_current(device);
    DB_CHECK_CUDA(cudaMemset(ctx.fault.data(), 0, bytes));
    count_host_wait();
    DB_CHECK_CUDA(cudaDeviceSynchronize());  // once per thread and device: plain memset is fine
  }
  return static_cast<kernels::IndexFault*>(ctx.fault.data());
}

namespace {
const char* index_op_name(int op) {
  switch (op) {
    case kernels::kGatherRows:
      return "gather_rows";
    case kernels::kScatterAddRows:
      return "scatter_add_rows";
    case kernels::kScatterRows:
      return "scatter_rows";
    case kernels::kGatherCols:
      return "gather_cols";
    case kernels::kCopyRows:
      return "copy_rows";
    default:
      return "a row op";
  }
}
}  // namespace

void wait_stream(int device, cudaStream_t stream) {
  DeviceContext& ctx = context(device);
  g_host_waits.fetch_add(1, std::memory_order_relaxed);
  auto* seen = static_cast<kernels::IndexFault*>(ctx.fault_host.data());
  // The record rides along with the wait: one small copy queued before it, read after it.
  if (seen != nullptr) {
    DB_CHECK_CUDA(
        cudaMemcpyAsync(seen, ctx.fault.data(), sizeof *seen, cudaMemcpyDeviceToHost, stream));
  }
  DB_CHECK_CUDA(cudaStreamSynchronize(stream));
  if (seen == nullptr || seen->op == kernels::kNoFault) return;
  const kernels::IndexFault fault = *seen;
  *seen = kernels::IndexFault{};
  DB_CHECK_CUDA(cudaMemsetAsync(ctx.fault.data(), 0, sizeof fault, stream));
  DB_THROW(runtime,
           "{}: index {} is out of range for {} rows (on cuda:{}; found by the kernel, reported "
           "at the next host wait)",
           index_op_name(fault.op), fault.index, fault.rows, device);
}

void count_host_wait() {
  g_host_waits.fetch_add(1, std::memory_order_relaxed);
}

void synchronize(int device) {
  wait_stream(device, enter_device(device));
}

int64_t host_waits() {
  return g_host_waits.load(std::memory_order_relaxed);
}

StreamMark::~StreamMark() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}
StreamMark::StreamMark(StreamMark&& o) noexcept
    : event_(std::exchange(o.event_, nullptr)), recorded_(o.recorded_) {}
StreamMark& StreamMark::operator=(StreamMark&& o) noexcept {
  if (this != &o) {
    if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = std::exchange(o.event_, nullptr);
    recorded_ = o.recorded_;
  }
  return *this;
}

void StreamMark::record(int device) {
  cudaStream_t s = enter_device(device);
  if (event_ == nullptr) {
    cudaEvent_t e = nullptr;
    DB_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    event_ = e;
  }
  DB_CHECK_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(event_), s));
  recorded_ = true;
}

void StreamMark::wait() {
  if (!recorded_) return;
  auto e = static_cast<cudaEvent_t>(event_);
  const cudaError_t q = cudaEventQuery(e);
  if (q != cudaErrorNotReady) {
    DB_CHECK_CUDA(q);
    return;
  }
  g_host_waits.fetch_add(1, std::memory_order_relaxed);
  DB_CHECK_CUDA(cudaEventSynchronize(e));
}

}  // namespace depbloom::backend
