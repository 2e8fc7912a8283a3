// depbloom-train --plan's report: what one training epoch of the strategy over `ranks`
// ranks exchanges, how much work its plans hold and, with a device profile, what the cost
// model prices it at; without training.
#pragma once

#include <optional>

#include "depbloom/costmodel/cost_model.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {

// --plan: the strategy's forecast of one training epoch (collectives, the plans' work counts
// and GEMM FLOPs; with --profile the cost model's times), logged and printed as one JSON
// line whose "comm" object is what metrics.jsonl's will hold (rank 0's).
void print_plan(train::Trainer& trainer, const train::TrainerConfig& tc, int ranks,
                const std::optional<costmodel::DeviceProfile>& profile);

}  // namespace depbloom::cli
