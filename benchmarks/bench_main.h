// main() of the benchmark programs that register cases at run time (CUDA ones only where a
// GPU is usable): Google Benchmark's usual start, run and shutdown.
#pragma once

#include <benchmark/benchmark.h>

namespace dbbench {

inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace dbbench
