// Backend runtime: CPU thread count, and the CUDA probe, device count and TF32 switch.
#include "depbloom/backend/runtime.h"

#include <omp.h>

#include <atomic>

extern "C" void openblas_set_num_threads(int num_threads);

#if DEPBLOOM_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace depbloom::backend {
namespace {
std::atomic<bool> g_tf32{false};
}

void set_cpu_threads(int n) {
  if (n <= 0) return;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int cpu_threads() {
  return omp_get_max_threads();
}

void set_tf32(bool on) {
  g_tf32 = on;
}
bool tf32() {
  return g_tf32;
}

#if DEPBLOOM_WITH_CUDA
bool cuda_usable(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = std::string("CUDA reports: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error so later probes start clean
    return false;
  }
  if (n == 0) {
    if (why != nullptr) *why = "no CUDA device found";
    return false;
  }
  return true;
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}
#else
bool cuda_usable(std::string* why) {
  if (why != nullptr) *why = "DepBloom was built without CUDA";
  return false;
}
int cuda_device_count() {
  return 0;
}
void synchronize(int /*device*/) {}
int64_t host_waits() {
  return 0;
}
StreamMark::~StreamMark() = default;
StreamMark::StreamMark(StreamMark&&) noexcept = default;
StreamMark& StreamMark::operator=(StreamMark&&) noexcept = default;
void StreamMark::record(int /*device*/) {}
void StreamMark::wait() {}
#endif

}  // namespace depbloom::backend
