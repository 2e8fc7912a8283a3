// The table of memory models: each model's config name (memory.memory_update's value, or
// "none" for memory.type none), its part, its plan flags, the combination rules only it
// imposes and its work as the cost model counts it. The cli's choices, find_problem, the
// trainer's plan and the cost model read it; a new model is one entry plus its part.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "depbloom/model/tgnn_config.h"

namespace depbloom::model {

class MemoryPart;
class ParameterStore;

// Where a memory model's work goes (the cost model's stage sink, src/costmodel/step_work.cpp):
// GEMM shapes C [m, n] = op(A) [m, k] op(B) [k, n] in the order the layer calls ops::gemm,
// forward or backward; the values its other ops move (the sink multiplies by the value
// width) and its op calls.
class WorkSink {
 public:
  virtual ~WorkSink() = default;
  virtual void gemm(bool backward, int64_t m, int64_t n, int64_t k, int64_t count) = 0;
  virtual void values(double forward, double backward) = 0;
  virtual void ops(int64_t forward, int64_t backward) = 0;
  void f(int64_t m, int64_t n, int64_t k, int64_t count = 1) { gemm(false, m, n, k, count); }
  void b(int64_t m, int64_t n, int64_t k, int64_t count = 1) { gemm(true, m, n, k, count); }
};

// The refined copies an updater start runs on (refine.start: updater): R copies from T terms
// over D distinct messages, B' distinct base rows and Dt distinct gaps.
struct CopyCounts {
  int64_t copies = 0, terms = 0, messages = 0, bases = 0, gaps = 0;
};

// What the step's plan does for a memory model (train::PlanConfig's memory flags).
struct MemoryPlanFlags {
  bool memory = true;      // node state is gathered, written back and mailed
  bool mail_mask = false;  // the updater reads the mailbox's occupancy mask
};

struct MemoryModel {
  const char* name;  // memory.memory_update's value ("none": memory.type none)
  std::unique_ptr<MemoryPart> (*make)(ParameterStore& store, const TgnnConfig& cfg);
  MemoryPlanFlags plan;
  // The first problem of a combination that only this model has (mailbox size, heads, the
  // embedding it goes with), checked by find_problem after the attention's own rules.
  std::optional<ConfigProblem> (*rules)(const TgnnConfig& cfg);
  // The updater's work over n rows that hold mail; null for a model without an updater.
  void (*work)(WorkSink& sink, const TgnnConfig& cfg, int64_t n);
  // The updater start's work (refine.start: updater); null where the model has none.
  void (*start_work)(WorkSink& sink, const TgnnConfig& cfg, const CopyCounts& copies);
};

// The entry of a kind: built-ins at their MemoryKind value, registered models after them.
const MemoryModel& memory_model(MemoryKind kind);
// The kind of the model named `name` (a MemoryModel::name), if any.
std::optional<MemoryKind> find_memory_model(const std::string& name);
// memory.memory_update's choices: the names of the models with memory, in table order.
std::vector<std::string> memory_update_choices();
// Adds a model to the table (before any config that names it is read; not thread-safe) and
// returns its kind. Its name must be new.
MemoryKind register_memory_model(const MemoryModel& entry);

}  // namespace depbloom::model
