// Shared by the benchmark programs: deterministic random inputs on any device, and main()
// for the programs that register cases at run time (CUDA ones only where a GPU is usable).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

#include "depbloom/backend/ops.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/philox.h"

namespace dbbench {

// Values in [-amplitude, amplitude) from Philox keyed by (seed, stream), made on the host
// (dense inputs keep OpenBLAS on its normal path), then copied to `device`.
template <class T>
depbloom::OwnedTensor random_tensor(depbloom::Shape shape, uint64_t seed, uint32_t stream,
                                    depbloom::Device device, float amplitude = 1.0f) {
  depbloom::OwnedTensor t(depbloom::DTypeOf<T>::value, shape);
  T* p = t.data<T>();
  const depbloom::RngKey key{seed, static_cast<uint32_t>(depbloom::RngPurpose::test), stream};
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<T>(amplitude *
                          (2.0f * depbloom::uniform_float(depbloom::philox_u32(key, i, 0)) - 1.0f));
  if (device.is_cpu()) return t;
  depbloom::OwnedTensor d(t.view().dtype(), shape, device);
  depbloom::ops::copy(d.view(), t.view());
  return d;
}

inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace dbbench
