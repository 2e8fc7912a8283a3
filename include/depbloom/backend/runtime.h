// Backend runtime state: thread count for the CPU ops, and for CUDA the probe, the current
// device, stream and cuBLAS handle of the calling thread, and the TF32 switch. Everything
// here works in a CPU-only build (the CUDA queries then report "no GPU").
#pragma once

#include <cstdint>
#include <string>

namespace depbloom::backend {

// Threads used by OpenMP regions and OpenBLAS (0 = leave as is).
void set_cpu_threads(int n);
int cpu_threads();

// True when CUDA was compiled in and a usable GPU answers. Any CUDA error (no driver,
// "driver version is insufficient", no device) counts as "no GPU"; *why receives the reason.
bool cuda_usable(std::string* why = nullptr);
int cuda_device_count();

// cuBLAS math mode for float GEMMs: TF32 tensor cores on or off (off by default).
void set_tf32(bool on);
bool tf32();

// Wait for all work queued on the calling thread's stream of `device` (no-op on the CPU).
void synchronize(int device = 0);

// Host waits for a GPU so far, all threads and devices: every time the CUDA backend blocked the
// host until a stream or the device caught up (a copy to or from pageable host memory, a
// synchronize, a workspace that grew, a communicator's wait). The trainer reports it per
// training step, where one (the loss read) is the goal. 0 on the CPU.
int64_t host_waits();

// GEMM FLOPs (2 m n k per product) that ops::gemm and ops::gemm_batched were asked for so
// far, all threads and devices: what the cost model's exact counts are checked against.
int64_t gemm_flops_issued();

// A point in the calling thread's stream of a GPU, so that the host can later make sure the
// stream has passed it (say, before reusing pinned memory that copies queued before it
// read). Move-only; no-ops on the CPU.
class StreamMark {
 public:
  StreamMark() = default;
  ~StreamMark();
  StreamMark(StreamMark&& o) noexcept;
  StreamMark& operator=(StreamMark&& o) noexcept;
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;

  // Marks the current end of the calling thread's stream on GPU `device`.
  void record(int device);
  // Returns once the stream has passed the mark: at once (and no host wait counted) when it
  // already has, or when nothing was recorded.
  void wait();

 private:
  void* event_ = nullptr;  // a cudaEvent_t
  bool recorded_ = false;
};

}  // namespace depbloom::backend
