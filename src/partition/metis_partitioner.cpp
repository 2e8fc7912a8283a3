// METIS k-way on a window's interaction graph. METIS numbers the parts of each call
// afresh, so the parts are renamed to match the previous windows' as far as possible:
// without it nearly every node would count as migrated even when the groups stay put.
#include <algorithm>
#include <cmath>

#include "depbloom/core/error.h"
#include "depbloom/partition/partition_config.h"
#include "node_partitioners.h"

#if DEPBLOOM_WITH_METIS
#include <metis.h>
#endif

namespace depbloom::partition {

bool metis_available() {
  return DEPBLOOM_WITH_METIS != 0;
}

#if DEPBLOOM_WITH_METIS
namespace {

// Renames parts greedily by the largest overlap (in vertex weight) with last_part: new name
// a -> old name b for the heaviest unmatched (a, b) first; ties to the lower indices.
void rename_to_last_parts(std::vector<int32_t>& parts, const WindowGraph& g,
                          const std::vector<int32_t>& last_part, int ranks) {
  const auto p = static_cast<size_t>(ranks);
  std::vector<int64_t> overlap(p * p, 0);  // [new][old]
  for (int32_t v = 0; v < g.size(); ++v) {
    const int32_t old = last_part[static_cast<size_t>(g.nodes[size_t(v)])];
    if (old >= 0) overlap[size_t(parts[size_t(v)]) * p + size_t(old)] += g.vertex_weight[size_t(v)];
  }
  std::vector<int32_t> rename(p, -1);
  std::vector<bool> old_taken(p, false);
  for (size_t round = 0; round < p; ++round) {
    int64_t best = -1;
    size_t best_new = 0, best_old = 0;
    for (size_t a = 0; a < p; ++a)
      for (size_t b = 0; b < p; ++b)
        if (rename[a] < 0 && !old_taken[b] && overlap[a * p + b] > best)
          best = overlap[a * p + b], best_new = a, best_old = b;
    rename[best_new] = static_cast<int32_t>(best_old);
    old_taken[best_old] = true;
  }
  for (int32_t& part : parts) part = rename[size_t(part)];
}

}  // namespace

std::vector<int32_t> metis_parts(const WindowGraph& g, const std::vector<int32_t>& last_part,
                                 int ranks, double imbalance, uint64_t seed) {
  std::vector<int32_t> parts(static_cast<size_t>(g.size()), 0);
  // One part, or no more nodes than parts: nothing for METIS to decide.
  if (ranks == 1) return parts;
  if (g.size() <= ranks) {
    for (int32_t v = 0; v < g.size(); ++v) parts[size_t(v)] = v;
    rename_to_last_parts(parts, g, last_part, ranks);
    return parts;
  }
  std::vector<idx_t> xadj(g.offsets.begin(), g.offsets.end());
  std::vector<idx_t> adjncy(g.neighbours.begin(), g.neighbours.end());
  std::vector<idx_t> adjwgt(g.edge_weight.begin(), g.edge_weight.end());
  std::vector<idx_t> vwgt(g.vertex_weight.begin(), g.vertex_weight.end());
  idx_t nvtxs = g.size(), ncon = 1, nparts = ranks, edgecut = 0;
  std::vector<idx_t> out(static_cast<size_t>(nvtxs), 0);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffffu);
  // METIS's balance bound in thousandths over 1 (its default, 30, is 1.03).
  options[METIS_OPTION_UFACTOR] =
      std::max<idx_t>(1, static_cast<idx_t>(std::lround((imbalance - 1) * 1000)));
  const int status =
      METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                          adjwgt.data(), &nparts, nullptr, nullptr, options, &edgecut, out.data());
  DB_ASSERT(status == METIS_OK, "METIS_PartGraphKway failed with status {} ({} nodes, {} parts)",
            status, nvtxs, nparts);
  for (size_t v = 0; v < parts.size(); ++v) parts[v] = static_cast<int32_t>(out[v]);
  rename_to_last_parts(parts, g, last_part, ranks);
  return parts;
}

#else

std::vector<int32_t> metis_parts(const WindowGraph&, const std::vector<int32_t>&, int, double,
                                 uint64_t) {
  DB_THROW(runtime,
           "partition.method metis: this build has no METIS (install libmetis-dev "
           "and reconfigure)");
}

#endif

}  // namespace depbloom::partition
