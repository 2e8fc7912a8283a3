// Backend runtime state: thread count for the CPU ops, and for CUDA the probe, the current
// device, stream and cuBLAS handle of the calling thread, and the TF32 switch. Everything
// here works in a CPU-only build (the CUDA queries then report "no GPU").
#pragma once

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

}  // namespace depbloom::backend
