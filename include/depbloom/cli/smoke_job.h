// The smoke job that `depbloom-train` runs until the models land: a memory-only link
// predictor (GRU memory updated from [own memory | partner memory | time encoding], dot
// product scores, BCE, Adam) over the training events of a stream, with neighbour sampling
// timed alongside. It exercises loader, split, CSR, sampler and every backend op family.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/core/tensor.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"

namespace depbloom::cli {

struct SmokeOptions {
  std::string data_path;
  data::LoadOptions load;
  data::SplitProtocol protocol = data::SplitProtocol::tgn;
  Device device = Device::cpu();
  int64_t batch = 600;
  int64_t memory_dim = 100;
  int64_t time_dim = 100;
  int32_t neighbours = 10;
  int epochs = 1;
  double lr = 1e-4;
  uint64_t seed = 0;
};

struct SmokeReport {
  int64_t events = 0;
  double seconds = 0;
  double first_loss = 0;  // mean loss over the first 10% of batches
  double last_loss = 0;   // mean loss over the last 10% of batches
  double sample_s = 0, gather_s = 0, compute_s = 0, optimise_s = 0, write_back_s = 0;
};

SmokeReport run_smoke_job(const SmokeOptions& options);

}  // namespace depbloom::cli
