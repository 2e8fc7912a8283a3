// The training command behind depbloom-train: config -> data -> split -> Trainer, epochs
// with a progress line and per-epoch metrics, checkpoints, the final test with the best
// epoch's checkpoint; and the --resume and --eval-only variants.
#pragma once

#include <string>

#include "depbloom/cli/options.h"
#include "depbloom/core/tensor.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {

struct TrainCommand {
  std::string data_path;  // resolved (the shipped stream when data.path is empty)
  std::string run_dir;    // created; holds config.yaml, metrics.jsonl, *.ckpt
  Device device = Device::cpu();
  std::string resume_dir;     // --resume: continue the run in this folder
  std::string eval_ckpt;      // --eval-only: evaluate this checkpoint
  std::string scores;         // --eval-only --scores: dump the test logits into this folder
  std::string classify_ckpt;  // --classify: node classification on this one (classify_command.h)
  // Strict data-parallel training over comm's ranks (null: one rank). Only the rank with
  // write_files writes metrics.jsonl and checkpoints (rank 0).
  dist::Communicator* comm = nullptr;
  bool write_files = true;
  // --plan: print what an epoch over this many ranks will exchange, and train nothing.
  int plan_ranks = 0;
  // --plan --profile: the device profile (configs/devices name or path) the cost model uses.
  std::string profile;
};

// The trainer settings a config asks for; config errors name the key. Checks that depend
// on the data (node features) happen in run_train_command, once the stream is loaded.
train::TrainerConfig trainer_config(const RunConfig& config, Device device);

// Runs the command; returns the process exit code (errors are thrown as depbloom::Error).
int run_train_command(const OptionRegistry& cfg, const TrainCommand& cmd);

}  // namespace depbloom::cli
