// CUDA RAII owners and the CUDA implementation of the device-memory seam (CUDA builds only).
#include "depbloom/core/cuda_resources.h"

#include <cstdio>

#include "depbloom/core/device_memory.h"

namespace depbloom {

const char* cublas_status_name(cublasStatus_t s) {
  return cublasGetStatusName(s);
}

namespace {
void log_cuda_failure(const char* what, cudaError_t e) noexcept {
  std::fprintf(stderr, "depbloom: %s failed in a destructor: %s\n", what, cudaGetErrorString(e));
}
}  // namespace

CudaStream::CudaStream(int device, bool non_blocking) : device_(device) {
  DB_CHECK_CUDA(cudaSetDevice(device));
  DB_CHECK_CUDA(cudaStreamCreateWithFlags(&s_, non_blocking ? cudaStreamNonBlocking : 0));
}
CudaStream::~CudaStream() {
  if (s_ == nullptr) return;
  cudaError_t e = cudaStreamDestroy(s_);
  if (e != cudaSuccess) log_cuda_failure("cudaStreamDestroy", e);
}
CudaStream& CudaStream::operator=(CudaStream&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr) cudaStreamDestroy(s_);
    s_ = std::exchange(o.s_, nullptr);
    device_ = o.device_;
  }
  return *this;
}
void CudaStream::synchronize() const {
  DB_CHECK_CUDA(cudaStreamSynchronize(s_));
}

CudaEvent::CudaEvent(bool timing) {
  DB_CHECK_CUDA(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
CudaEvent::~CudaEvent() {
  if (e_ == nullptr) return;
  cudaError_t e = cudaEventDestroy(e_);
  if (e != cudaSuccess) log_cuda_failure("cudaEventDestroy", e);
}
CudaEvent& CudaEvent::operator=(CudaEvent&& o) noexcept {
  if (this != &o) {
    if (e_ != nullptr) cudaEventDestroy(e_);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}
void CudaEvent::record(cudaStream_t s) const {
  DB_CHECK_CUDA(cudaEventRecord(e_, s));
}
void CudaEvent::wait_on(cudaStream_t s) const {
  DB_CHECK_CUDA(cudaStreamWaitEvent(s, e_, 0));
}

CublasHandle::CublasHandle(int device) {
  DB_CHECK_CUDA(cudaSetDevice(device));
  DB_CHECK_CUBLAS(cublasCreate(&h_));
}
CublasHandle::~CublasHandle() {
  if (h_ != nullptr) cublasDestroy(h_);
}
CublasHandle& CublasHandle::operator=(CublasHandle&& o) noexcept {
  if (this != &o) {
    if (h_ != nullptr) cublasDestroy(h_);
    h_ = std::exchange(o.h_, nullptr);
  }
  return *this;
}

bool built_with_cuda() {
  return true;
}

void* device_malloc(size_t bytes, int device) {
  void* p = nullptr;
  DB_CHECK_CUDA(cudaSetDevice(device));
  DB_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

void device_free(void* p, int device) noexcept {
  cudaSetDevice(device);
  cudaError_t e = cudaFree(p);
  if (e != cudaSuccess) log_cuda_failure("cudaFree", e);
}

void* pinned_malloc(size_t bytes) {
  void* p = nullptr;
  DB_CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

void pinned_free(void* p) noexcept {
  cudaError_t e = cudaFreeHost(p);
  if (e != cudaSuccess) log_cuda_failure("cudaFreeHost", e);
}

namespace {
// Waits on the host for every stream of `device`, of every thread.
void wait_for_device(int device) {
  DB_CHECK_CUDA(cudaSetDevice(device));
  DB_CHECK_CUDA(cudaDeviceSynchronize());
}
}  // namespace

void device_memcpy(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                   int kind) {
  cudaMemcpyKind k = kind == 0   ? cudaMemcpyHostToDevice
                     : kind == 1 ? cudaMemcpyDeviceToHost
                                 : cudaMemcpyDeviceToDevice;
  // The backend's op streams are non-blocking, so nothing orders the legacy stream that
  // cudaMemcpy uses after their work: wait for the device(s) first (core cannot see the
  // backend's streams, and a device-wide wait covers every thread's). Afterwards too, as a
  // pageable copy may return before the data lands and later ops on any stream must see it.
  if (src_device >= 0) wait_for_device(src_device);
  if (dst_device >= 0 && dst_device != src_device) wait_for_device(dst_device);
  DB_CHECK_CUDA(cudaMemcpy(dst, src, bytes, k));
  wait_for_device(dst_device >= 0 ? dst_device : src_device);
}

}  // namespace depbloom
