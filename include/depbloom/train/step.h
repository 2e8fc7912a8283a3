// A training step as a list of stages with explicit inputs and outputs. StepData holds what
// the stages pass along, each field written by the stage named beside it and read by later
// ones; the Trainer runs the stages in table order and times each one. The seams of the
// DepBloom techniques: the plan (sample) is made without node state, the gather is its own
// stage, and write_back hands the collected WriteSet to the strategy.
#pragma once

#include <array>
#include <cstdint>

#include "depbloom/core/tensor.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/tgnn.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/schedule.h"
#include "depbloom/train/step_io.h"

namespace depbloom::train {

enum class Stage : uint8_t {
  sample,         // negatives, the BatchPlan, staged inputs   -> plan, staged
  gather,         // node-state rows of the memory rows         -> rows
  memory_update,  // the updater over the gathered rows         -> updated rows [0, U)
  refine,         // refined copies (several micro-batches)     -> updated rows [U, U + R)
  embed,          // the embedding of every root                -> emb
  loss,           // link predictor and TGL's loss              -> logits, local_loss
  backward,       // gradients of this rank's share of the loss -> the store's gradients
  reduce,         // the strategy combines the ranks' gradients
  optimise,       // one Adam step
  write_back,     // collect the writes; the strategy applies/exchanges them -> writes, loss
};
inline constexpr int kStages = 10;

// "sample", "gather", "memory_update", ...: the names in logs and metrics.jsonl.
const char* stage_name(Stage stage);

// Seconds per stage, accumulated over an epoch's steps.
struct StageTimes {
  std::array<double, kStages> seconds{};
  double& operator[](Stage s) { return seconds[static_cast<size_t>(s)]; }
  double operator[](Stage s) const { return seconds[static_cast<size_t>(s)]; }
};

struct StepData {
  const ScheduledStep* step = nullptr;  // input: this rank's events
  uint32_t epoch = 0;                   // input: negatives and dropout are drawn for it
  BatchPlan plan;                       // sample
  StagedBatch staged;                   // sample
  model::MemoryRows rows;               // gather
  Tensor updated;                       // memory_update, refine [U + R, d_input]
  Tensor coherence_target;              // refine [S, d_mem] (with the coherence loss)
  Tensor emb;                           // embed [(2+K)B, d_out]
  Tensor logits, targets;               // loss [(1+K)B]
  double local_loss = 0;                // loss: TGL's loss over this rank's events
  double coherence_loss = 0;            // loss: this rank's coherence loss (0 without it)
  model::WriteSet writes;               // write_back: this rank's writes
  double loss = 0;                      // write_back: the step's global loss

  bool empty() const { return step == nullptr || step->count == 0; }
  // The memory rows without the refined copies: what the write-back reads.
  Tensor memory_rows() const { return updated.rows(0, staged.memory_rows); }
};

}  // namespace depbloom::train
