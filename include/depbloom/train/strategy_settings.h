// StrategySettings: the run's strategy.* and partition.* keys in one struct, which the
// strategy, the trainer and the forecast all read. The strategy table (strategy.h) says which
// strategy reads which settings and checks them; check_strategy_settings runs those checks.
#pragma once

#include <string>

#include "depbloom/partition/partition_config.h"

namespace depbloom::train {

struct StrategySettings {
  std::string name = "strict";           // strategy.name, one of strategy_names()
  partition::PartitionConfig partition;  // depbloom's window plan
};

// Config errors naming the key: an unknown strategy.name, or a setting that a table entry's
// check refuses. Every entry's settings are checked whichever strategy runs, so switching
// strategy.name never uncovers a bad key that the config already held.
void check_strategy_settings(const StrategySettings& settings);

}  // namespace depbloom::train
