// depbloom-train --classify CHECKPOINT: dynamic node classification on a trained
// link-prediction checkpoint (train/node_classifier.h, docs/node_classification.md).
#pragma once

#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"

namespace depbloom::cli {

// Loads the stream, its labels (classify.labels) and cmd.classify_ckpt, embeds every event's
// source with the frozen model, trains the decoder (classify.*) and appends one validation
// line per epoch and the test line to metrics.jsonl in cmd.run_dir. Returns the exit code;
// errors are thrown as depbloom::Error. One process only.
int run_classify_command(const OptionRegistry& cfg, const TrainCommand& cmd);

}  // namespace depbloom::cli
