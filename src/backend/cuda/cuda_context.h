// Internal: the per-thread CUDA context of the backend. For each (calling thread, device) it
// lazily owns a non-blocking stream, a cuBLAS handle and reusable device workspaces, and it
// holds the thread's *current* stream, on which every CUDA op of that thread is queued.
// Not a public header: the CPU build and code above `backend` never see it.
#pragma once

#include <cstddef>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "depbloom/backend/cuda_stream.h"  // enter_device, count_host_wait

namespace depbloom::kernels {
struct IndexFault;
}

namespace depbloom::backend {

// The calling thread's current stream on `device`: its own lazily created non-blocking
// stream unless set_current_stream() installed another one.
cudaStream_t current_stream(int device);

// Queue the calling thread's later ops on `device` into `stream` (which must belong to
// `device` and outlive its use); nullptr goes back to the thread's own stream. Returns the
// previous setting (nullptr when it was the own stream). Pure bookkeeping: no CUDA call.
cudaStream_t set_current_stream(int device, cudaStream_t stream);

// Scoped stream switch for side-stream work: ops inside the scope run on `stream`.
class StreamScope {
 public:
  StreamScope(int device, cudaStream_t stream)
      : device_(device), previous_(set_current_stream(device, stream)) {}
  ~StreamScope() { set_current_stream(device_, previous_); }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  int device_;
  cudaStream_t previous_;
};

// The calling thread's cuBLAS handle on `device`, bound to the current stream and with the
// math mode that backend::tf32() asks for (TF32 tensor ops, or exact FP32).
cublasHandle_t cublas_handle(int device);

// Queues a copy of `bytes` from pinned host memory to `dst` on GPU `device` on the calling
// thread's current stream, and returns at once: the source must stay unchanged until the
// stream has run it.
void copy_to_device_async(void* dst, const void* pinned_src, size_t bytes, int device);

// Scratch device memory for one op on the current stream of `device` (at least `bytes`,
// 256-byte aligned). Valid for work queued on that stream until the next workspace() call
// of this thread for the same device and stream; ops on one stream run in order, so an op
// may reuse it freely. The buffer only grows (after a warm-up step nothing is allocated);
// growing first waits for the stream, because queued kernels may still use the old one.
void* workspace(int device, size_t bytes);

// The calling thread's IndexFault record on `device` (device memory, zeroed once), where its
// gather/scatter kernels record an index past their table (kernels/gather_scatter.cuh).
kernels::IndexFault* index_fault(int device);

// The one way the backend waits on the host for a stream of `device`: counts the wait (see
// backend::host_waits), then throws, naming the op, if the thread's kernels recorded an index
// fault; that is the next host synchronisation after the faulty kernel, as the host cannot
// learn of it sooner without waiting.
void wait_stream(int device, cudaStream_t stream);

}  // namespace depbloom::backend
