// The most bytes all Buffers (memory.h) held at once since the process started, per device
// type: a run's peak memory for its logs (metrics.jsonl's peak_bytes). A GPU's peak leaves
// out what CUDA, cuBLAS and NCCL allocate themselves.
#pragma once

#include <cstdint>

namespace depbloom {

int64_t host_peak_bytes();
int64_t device_peak_bytes();

}  // namespace depbloom
