// StepWork: what one rank's training step does, counted from its BatchPlan (events, memory
// rows, refined rows, sampled slots, writes), and StageWork: the work of each stage of
// step.h that those counts imply for a model (its GEMM shapes, its other memory traffic,
// its op calls). The cost model (cost_model.h) prices them; nothing here is measured.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "depbloom/model/tgnn_config.h"
#include "depbloom/train/step.h"

namespace depbloom::costmodel {

// One GEMM shape C [m, n] = op(A) [m, k] op(B) [k, n], made `count` times.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, count = 1;
};
// 2 m n k: one multiply and one add per inner-product term.
inline int64_t gemm_flops(int64_t m, int64_t n, int64_t k) {
  return 2 * m * n * k;
}
inline int64_t gemm_flops(const GemmShape& g) {
  return g.count * gemm_flops(g.m, g.n, g.k);
}

// One rank's step as its plan (and the node state the plan meets) counts it.
struct StepWork {
  int64_t events = 0;           // B
  int32_t negatives = 1;        // K
  int64_t memory_rows = 0;      // U: distinct (node, time) rows gathered
  int64_t updated_rows = 0;     // rows the updater runs on: those holding mail (or all U)
  int64_t refined_rows = 0;     // R refined copies
  int64_t refine_terms = 0;     // T aggregated messages
  int64_t refine_messages = 0;  // D distinct messages among them
  int64_t refine_bases = 0;     // B' distinct memory rows the copies correct
  int64_t refine_gaps = 0;      // Dt distinct time gaps among the copies
  int64_t sampled_slots = 0;    // neighbour slots over every sampled hop
  // Per hop, the distinct rows its slots read (the rows a table-mode layer projects).
  std::array<int64_t, model::kMaxHops> slot_reads{};
  int64_t written_rows = 0;   // memory rows the write-back writes
  int64_t written_mails = 0;  // mails it writes
  // Rows and mails the write-back applies to this rank's replica (strict: every rank's).
  int64_t applied_rows = 0, applied_mails = 0;
  int64_t urgent_rows = 0;  // written rows the rank's next step reads (DESIGN.md 7.3)
  bool exchange = false;    // the step ends at a sync point (the ranks reconcile)
};

// The work of one stage: its GEMMs, the bytes its other ops move (gathers, element-wise
// ops, the fused attention), and its op calls (kernels on a GPU; GEMMs included).
struct StageWork {
  std::vector<GemmShape> gemms;
  double bytes = 0;
  int64_t ops = 0;
  int64_t uploads = 0;  // of `ops`, host-to-device copies (priced at the upload latency)
  int64_t flops() const;
};
using StepStageWork = std::array<StageWork, train::kStages>;

// What the stage work depends on beyond the model's widths.
struct WorkModel {
  model::TgnnConfig model;
  bool refine_mean = false;  // refine.aggregate mean: the terms are weighted (one GEMM more)
  int64_t value_bytes = 4;   // f32
  int64_t parameters = 0;    // the optimiser's width
  // A step's op calls as --plan's dry run counts them (both lanes, uploads apart), and the
  // kernel launches they make on CUDA. When > 0 the cost model prices these instead of the
  // per-layer estimates' total (cost_model.h); 0: the estimates.
  double counted_op_calls = 0;
  double counted_launches = 0;
};

// out[stage] = the work of `step` in each stage (the forward GEMMs in memory_update, refine,
// embed and loss; every backward GEMM in backward), as the model's layers make them. An
// empty step (0 events) does nothing but the optimiser.
void step_stage_work(StepStageWork& out, const WorkModel& wm, const StepWork& step);

// GEMM FLOPs of a step: the forward stages' and the backward's.
struct StepFlops {
  int64_t forward = 0, backward = 0;
  int64_t total() const { return forward + backward; }
};
StepFlops step_flops(const StepStageWork& work);

}  // namespace depbloom::costmodel
