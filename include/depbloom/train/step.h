// A step as a list of stages with explicit inputs and outputs. StepData holds what the stages
// pass along, each field written by the stage named beside it and read by later ones; the
// StepRunner (step_runner.h) runs the stages a StageMask selects, in its table's order, for
// a training or an evaluation pass. The seams of the DepBloom techniques: the plan (sample)
// is made without node state, the gather is its own stage, and write_back hands the
// collected WriteSet to the strategy.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

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

// A set of stages: what one run of the StepRunner executes (in the table's order, whatever
// the order they are named in here).
class StageMask {
 public:
  constexpr StageMask() = default;
  constexpr StageMask(std::initializer_list<Stage> stages) {
    for (Stage s : stages) bits_ |= bit(s);
  }
  constexpr bool has(Stage s) const { return (bits_ & bit(s)) != 0; }
  constexpr StageMask with(Stage s) const {
    StageMask m = *this;
    m.bits_ |= bit(s);
    return m;
  }

 private:
  static constexpr uint16_t bit(Stage s) {
    return static_cast<uint16_t>(1u << static_cast<int>(s));
  }
  uint16_t bits_ = 0;
};

// The forward half: everything up to the loss (gradient checks, evaluation's scores).
inline constexpr StageMask kForwardStages{Stage::sample, Stage::gather, Stage::memory_update,
                                          Stage::refine, Stage::embed,  Stage::loss};
inline constexpr StageMask kTrainingStages = kForwardStages.with(Stage::backward)
                                                 .with(Stage::reduce)
                                                 .with(Stage::optimise)
                                                 .with(Stage::write_back);
// Evaluation: the forward half, scores instead of a loss, and the writes (memory carries on).
inline constexpr StageMask kEvaluationStages = kForwardStages.with(Stage::write_back);

// What a run of the stages is for. Training draws dropout, takes the training negatives and
// neighbours, and hands its writes to the strategy; evaluation runs without dropout on the
// evaluation negatives and neighbours, scores instead of taking a loss, and applies its
// writes to the node state at once.
enum class Pass : uint8_t { train, evaluate };

// Seconds per stage, accumulated over an epoch's steps.
struct StageTimes {
  std::array<double, kStages> seconds{};
  double& operator[](Stage s) { return seconds[static_cast<size_t>(s)]; }
  double operator[](Stage s) const { return seconds[static_cast<size_t>(s)]; }
};

struct StepData {
  const ScheduledStep* step = nullptr;  // input: this rank's events
  uint32_t epoch = 0;                   // input: negatives and dropout are drawn for it
  Pass pass = Pass::train;              // input
  uint32_t split = 0;                   // input (evaluation): the split its negatives are of
  BatchPlan plan;                       // sample
  StagedBatch staged;                   // sample
  model::MemoryRows rows;               // gather
  Tensor updated;                       // memory_update, refine [U + R, d_input]
  Tensor coherence_target;              // refine [S, d_mem] (with the coherence loss)
  Tensor emb;                           // embed [(2+K)B, d_out]
  Tensor logits, targets;               // loss [(1+K)B] (targets: training only)
  Tensor d_logits;                      // loss (training): the task loss's gradient
  double local_loss = 0;                // loss: TGL's loss over this rank's events
  double coherence_loss = 0;            // loss: this rank's coherence loss (0 without it)
  model::WriteSet writes;               // write_back: this rank's writes
  double loss = 0;                      // write_back: the step's global loss
  // Input (evaluation): `negatives_k` negatives per event, event-major, in place of the
  // split's (depbloom-stream's queries); negatives_k < 0: the split's.
  const int32_t* negatives = nullptr;
  int32_t negatives_k = -1;

  bool empty() const { return step == nullptr || step->count == 0; }
  // The memory rows without the refined copies: what the write-back reads.
  Tensor memory_rows() const { return updated.rows(0, staged.memory_rows); }
};

}  // namespace depbloom::train
