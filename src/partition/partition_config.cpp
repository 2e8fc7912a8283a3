// The partition methods' names and the checks of a PartitionConfig.
#include "depbloom/partition/partition_config.h"

#include <cmath>

#include "depbloom/core/error.h"

namespace depbloom::partition {

const NameTable<PartitionMethod>& partition_method_names() {
  static const NameTable<PartitionMethod> names{{PartitionMethod::metis, "metis"},
                                                {PartitionMethod::fennel, "fennel"},
                                                {PartitionMethod::hash, "hash"}};
  return names;
}

const char* partition_method_name(PartitionMethod method) {
  return partition_method_names().name(method);
}

void check_partition_config(const PartitionConfig& config) {
  if (config.window_steps < 1)
    DB_THROW(config, "partition.window_steps must be >= 1, got {}", config.window_steps);
  if (!(std::isfinite(config.imbalance) && config.imbalance >= 1.0))
    DB_THROW(config, "partition.imbalance must be a number >= 1 (max part events / mean), got {}",
             config.imbalance);
  if (config.method == PartitionMethod::metis && !metis_available())
    DB_THROW(config,
             "partition.method: metis is not available, this build found no METIS library "
             "(install libmetis-dev and reconfigure, or choose fennel or hash)");
}

}  // namespace depbloom::partition
