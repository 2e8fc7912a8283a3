// RAII owners of CUDA resources: streams, events and cuBLAS handles. Move-only; destructors
// log instead of throwing. Include only in CUDA builds (the CPU build never sees this file).
#pragma once

#include <utility>

#include "depbloom/core/cuda_check.h"

namespace depbloom {

class CudaStream {
 public:
  CudaStream() = default;
  explicit CudaStream(int device, bool non_blocking = true);
  ~CudaStream();
  CudaStream(CudaStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)), device_(o.device_) {}
  CudaStream& operator=(CudaStream&& o) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }
  void synchronize() const;

 private:
  cudaStream_t s_ = nullptr;
  int device_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() = default;
  explicit CudaEvent(bool timing);
  ~CudaEvent();
  CudaEvent(CudaEvent&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& o) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) const;
  // Make `s` wait for this event (device-side ordering, no host synchronisation).
  void wait_on(cudaStream_t s) const;

 private:
  cudaEvent_t e_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  explicit CublasHandle(int device);
  ~CublasHandle();
  CublasHandle(CublasHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& o) noexcept;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace depbloom
