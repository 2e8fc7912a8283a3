// Strategy: how data-parallel ranks share the training stream. It decides which part of each
// global batch this rank runs (and in which order), how the gradients of the ranks are
// combined, and when and how node memory and mailboxes are reconciled afterwards. The
// Trainer runs the model on the slice it is given; it never talks to the communicator itself.
// Not a scheduler: every strategy here runs one step after the other, unpipelined.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"
#include "depbloom/train/batch_planner.h"

namespace depbloom::train {

// This rank's part of a global batch of `count` events.
struct Slice {
  const int64_t* events = nullptr;  // [count] stream rows, ascending (a view of the batch)
  int64_t count = 0;                // 0: the rank still takes part in every collective
  // The slice's share of the global batch: its loss is scaled by it so that the reduced
  // gradient is the gradient of the global mean.
  double loss_share = 1.0;
};

// strict's split: P contiguous slices in rank order, rank r taking events
// [r*B/P, (r+1)*B/P) of the batch, so sizes differ by at most one and the slices in rank
// order are the batch in event order.
// (Every random draw is keyed by the event, so a slice needs nothing else to draw what the
// whole batch would.)
Slice contiguous_slice(const int64_t* events, int64_t count, int rank, int ranks);

// What one step leaves for the strategy to reconcile: the planner that planned this rank's
// slice and the model's outputs for it (views into the step arena; stale when the slice was
// empty, and then not read).
struct StepOutputs {
  BatchPlanner* planner = nullptr;
  Arena* arena = nullptr;
  model::NodeState* state = nullptr;
  Tensor updated;            // [U, d_mem] the updated memory rows
  Tensor edge_feat;          // [E, d_edge] or Tensor{}
  Tensor row_last_update;    // [U] or Tensor{}
  bool memory = true;        // false: the model keeps no node memory, nothing to exchange
  int64_t global_count = 0;  // events in the global batch
  int64_t local_count = 0;   // events in this rank's slice
  double local_loss = 0;     // TGL's loss over the slice (0 for an empty slice)
};

// Per-epoch accounting of what the strategy moved.
struct StrategyCounts {
  int64_t local_events = 0;     // events this rank trained on
  int64_t exchanged_rows = 0;   // memory rows every rank wrote and all of them exchanged
  int64_t exchanged_mails = 0;  // mails likewise
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  virtual const char* name() const = 0;
  virtual int ranks() const { return 1; }

  // Identical initial parameters on every rank (rank 0's win).
  virtual void sync_parameters(model::ParameterStore& store) { (void)store; }
  // This rank's part of the global batch events[0, count).
  virtual Slice slice(const int64_t* events, int64_t count) const = 0;
  // After the backward, before the optimiser: the gradients every rank steps with.
  virtual void reduce_gradients(model::ParameterStore& store) { (void)store; }
  // After the optimiser: the step's memory and mail writes applied so that every rank's node
  // state is the one the 1-rank run has. Returns the global batch's loss.
  virtual double reconcile(const StepOutputs& out) = 0;

  void begin_epoch() { counts_ = StrategyCounts{}; }
  const StrategyCounts& counts() const { return counts_; }

 protected:
  Strategy() = default;
  StrategyCounts counts_;
};

// One device: the whole batch, no collectives, the planner's write-back in one go.
class SingleDeviceStrategy final : public Strategy {
 public:
  const char* name() const override { return "single-device"; }
  Slice slice(const int64_t* events, int64_t count) const override;
  double reconcile(const StepOutputs& out) override;
};

// strict: every global batch split into contiguous slices, one per rank; one all-reduce of
// the gradients; after each step the memory, last-update and mailbox rows every rank wrote
// are all-gathered and applied in event order, so every replica stays the 1-rank state.
// Per step: 1 all-reduce, 1 all-gather (per-rank counts and loss), 6 all-gather-v.
class StrictStrategy final : public Strategy {
 public:
  explicit StrictStrategy(dist::Communicator& comm) : comm_(comm) {}
  const char* name() const override { return "strict"; }
  int ranks() const override { return comm_.size(); }
  void sync_parameters(model::ParameterStore& store) override;
  Slice slice(const int64_t* events, int64_t count) const override;
  void reduce_gradients(model::ParameterStore& store) override;
  double reconcile(const StepOutputs& out) override;

 private:
  void exchange_and_apply(const StepOutputs& out, const BatchPlanner::Writes& w, int64_t mem_total,
                          int64_t mail_total);

  dist::Communicator& comm_;
  // Per-rank counts and the gathered host-side node ids and mail order, reused every step.
  std::vector<double> my_counts_, all_counts_;
  std::vector<int64_t> mem_counts_, mail_counts_, scaled_;
  std::vector<int32_t> all_mem_node_, all_mail_node_;
  std::vector<int64_t> mail_order_;
};

// The strategies strategy.name accepts.
const std::vector<std::string>& strategy_names();
// The strategy `name` over `comm` (not owned; null: one device). With one rank on the local
// communicator every strategy is single-device training, exactly; one rank on mpi or nccl
// runs the strategy with its collectives (same numbers). An unknown name is a config error
// naming strategy.name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, dist::Communicator* comm);

}  // namespace depbloom::train
