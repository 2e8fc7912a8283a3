// train::fit: a whole training run around a Trainer: epochs with validation, early stopping
// on the validation per-batch AP, the best and the last epoch's checkpoints, metrics.jsonl
// (and steps.jsonl), --resume, and the final test with the best epoch's state. It reports
// through a FitObserver and prints nothing: the cli logs, tests and benchmarks call it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "depbloom/train/trainer.h"

namespace depbloom::train {

struct FitOptions {
  int epochs = 3;
  int64_t patience = 0;     // epochs without validation gain before stopping; 0: never
  std::string run_dir;      // where files go (metrics.jsonl, ...); empty: no files
  bool checkpoints = true;  // write best.ckpt and last.ckpt into run_dir
  bool step_log = false;    // write every step's loss into run_dir/steps.jsonl
  std::string resume_dir;   // continue the run whose last.ckpt (and best.ckpt) is here
  std::string config_text;  // the effective config, kept in every checkpoint
  // Time to accuracy: the first epoch whose validation per-batch-mean AP reaches this is
  // recorded (0: no target); with stop_at_target the run stops after it (patience, when set,
  // may stop it earlier).
  double target_val_ap = 0.0;
  bool stop_at_target = false;
};

// The run's training so far, over all ranks and every epoch since it started (resumes
// included): training seconds (evaluation excluded), optimiser steps and events.
struct RunTotals {
  double train_seconds = 0.0;
  int64_t steps = 0;
  int64_t events = 0;
};

// Where train.target_val_ap was first reached: the epoch and the totals after it.
struct ReachedTarget {
  int epoch = 0;  // 0: not reached
  RunTotals at;
};

struct FitResult {
  int best_epoch = 0;  // by validation per-batch AP (0: no epoch ran)
  double best_val_ap = -1.0;
  std::vector<EpochResult> epochs;  // the epochs this call ran
  EvalResult test, test_new;        // of the best epoch's state
  RunTotals totals;                 // after the last epoch
  ReachedTarget reached;            // with FitOptions::target_val_ap
};

class FitObserver {
 public:
  virtual ~FitObserver() = default;
  virtual void on_resume(const std::string& dir, int last_epoch, int best_epoch) {
    (void)dir, (void)last_epoch, (void)best_epoch;
  }
  // Within an epoch, after each step: steps done of total, mean loss so far.
  virtual void on_progress(int epoch, int64_t done, int64_t total, double loss) {
    (void)epoch, (void)done, (void)total, (void)loss;
  }
  virtual void on_epoch(const EpochResult& r, int epochs) { (void)r, (void)epochs; }
  virtual void on_early_stop(int epoch, int64_t stale) { (void)epoch, (void)stale; }
  virtual void on_target(const ReachedTarget& r) { (void)r; }
  virtual void on_test(const FitResult& r) { (void)r; }
};

FitResult fit(Trainer& trainer, const FitOptions& opts, FitObserver* observer = nullptr);

// --eval-only: the test of the state in `checkpoint`; appends its line to
// run_dir/metrics.jsonl when run_dir is set.
std::pair<EvalResult, EvalResult> test_checkpoint(Trainer& trainer, const std::string& checkpoint,
                                                  const std::string& run_dir);

}  // namespace depbloom::train
