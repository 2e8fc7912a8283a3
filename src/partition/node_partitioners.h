// The graph partitioners of a window (hash needs no graph: window_plan.cpp). Each returns
// the part of every local node of a WindowGraph ([n], values in [0, ranks)); `last_part`
// ([num_nodes]) holds each node's part in the last earlier window that touched it, -1 for
// none. Internal to the partition part.
#pragma once

#include <cstdint>
#include <vector>

#include "window_graph.h"

namespace depbloom::partition {

// Restreaming Fennel warm-started from last_part (fennel_partitioner.cpp documents it).
std::vector<int32_t> fennel_parts(const WindowGraph& g, const std::vector<int32_t>& last_part,
                                  int ranks);

// METIS k-way (METIS_PartGraphKway) with load imbalance `imbalance` in vertex weight and
// METIS's seed `seed`; parts then renamed to overlap last_part the most (the cut is the
// same; fewer nodes change part). A runtime error in builds without METIS.
std::vector<int32_t> metis_parts(const WindowGraph& g, const std::vector<int32_t>& last_part,
                                 int ranks, double imbalance, uint64_t seed);

}  // namespace depbloom::partition
