// The `partition.*` settings: how the training stream is cut into windows and how each
// window's nodes are split over the ranks. Read by the window plan (window_plan.h); the
// config keys that fill it are declared in src/cli/config_schema.cpp.
#pragma once

#include <cstdint>

#include "depbloom/core/name_table.h"

namespace depbloom::partition {

// metis: k-way on the window's interaction graph; fennel: a streaming partitioner that
// starts from the previous window's parts; hash: node id mod P, the naive baseline.
enum class PartitionMethod { metis, fennel, hash };

const NameTable<PartitionMethod>& partition_method_names();  // "metis" | "fennel" | "hash"
const char* partition_method_name(PartitionMethod method);

// Whether this build links METIS (without it `metis` is a config error).
bool metis_available();

struct PartitionConfig {
  int64_t window_steps = 8;  // W = window_steps x the global batch
  PartitionMethod method = PartitionMethod::metis;
  double imbalance = 1.05;  // bound on max part events / mean part events per window
};

// Config errors naming the key: window_steps < 1, imbalance < 1 or not finite, metis in a
// build without METIS.
void check_partition_config(const PartitionConfig& config);

}  // namespace depbloom::partition
