// The backend's current CUDA stream, for code above the backend that queues work of its own
// beside the ops (the NCCL communicator's collectives), and the host-wait count such code
// adds to. CUDA builds only; the rest of the backend's CUDA context stays private.
#pragma once

#include <cuda_runtime.h>

namespace depbloom::backend {

// Makes `device` the calling thread's current CUDA device (cudaSetDevice only when it
// differs) and returns the thread's current stream on it. Every op calls this first. The
// device is left current on return (no restore), as kernel launches need it.
cudaStream_t enter_device(int device);

// Counts a host wait made by a polling loop outside the backend (NCCL's waits).
void count_host_wait();

}  // namespace depbloom::backend
