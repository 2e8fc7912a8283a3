// depbloom-train's training command: config -> TrainerConfig, data, and train::fit with a
// logging observer (the progress line, the epoch and stage lines, the final test), or the
// test of one checkpoint for --eval-only.
#include "depbloom/cli/train_command.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "depbloom/cli/device_profile.h"
#include "depbloom/cli/plan_report.h"
#include "depbloom/cli/score_dump.h"
#include "depbloom/core/timer.h"
#include "depbloom/costmodel/cost_model.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/model/memory_model.h"
#include "depbloom/train/fit.h"
#include "depbloom/train/run_log.h"

namespace depbloom::cli {
using nlohmann::json;

namespace {

void require(bool ok, const char* key, const std::string& why) {
  if (!ok) DB_THROW(config, "{}: {}", key, why);
}

std::string eval_text(const char* name, const train::EvalResult& r) {
  if (!r.valid) return "";
  std::string s = fmt::format("{} AP {:.4f} AUC {:.4f} (per-batch mean AP {:.4f} AUC {:.4f})", name,
                              r.whole.ap, r.whole.auc, r.batch_mean.ap, r.batch_mean.auc);
  if (r.mrr >= 0) s += fmt::format(" MRR {:.4f}", r.mrr);
  return s;
}

std::string stages_text(const train::EpochResult& r) {
  std::string s = "  stages:";
  for (int i = 0; i < train::kStages; ++i)
    s += fmt::format(" {} {:.2f} s,", train::stage_name(static_cast<train::Stage>(i)),
                     r.stages.seconds[static_cast<size_t>(i)]);
  const json calls = train::calls_json(r.calls, r.batches);
  return s + fmt::format(
                 " evaluation {:.2f} s; {:.0f} memory rows per step ({:.0f} refined); host "
                 "waits/step {:.1f}; op calls/step {:.1f}, uploads/step {:.1f}",
                 r.eval_seconds, r.memory_rows, r.refined_rows, r.host_waits,
                 calls["op_calls_per_step"].get<double>(), calls["uploads_per_step"].get<double>());
}

// The log lines of a run: progress within an epoch, each epoch's result, the test.
class LoggingObserver final : public train::FitObserver {
 public:
  LoggingObserver(const RunConfig& c, int rank)
      : progress_on_(c.run.progress),
        log_every_(c.run.log_every),
        batch_(c.trainer.batch_size),
        target_(c.fit.target_val_ap),
        rank_(rank),
        fail_rank_(std::getenv("DEPBLOOM_TEST_FAIL_RANK")) {}

  void on_resume(const std::string& dir, int last_epoch, int best_epoch) override {
    spdlog::info("resuming {} after epoch {} (best so far: epoch {})", dir, last_epoch, best_epoch);
  }

  void on_progress(int epoch, int64_t done, int64_t total, double loss) override {
    if (done == 1) epoch_watch_.restart(), since_log_.restart();
    // For the failure test (tests/CMakeLists.txt): this rank throws after its second step.
    if (fail_rank_ != nullptr && std::atoi(fail_rank_) == rank_ && done == 2)
      DB_THROW(runtime, "failing on purpose (DEPBLOOM_TEST_FAIL_RANK={}) in epoch {}", fail_rank_,
               epoch);
    const bool every = log_every_ > 0 && done % log_every_ == 0;
    if (!progress_on_ || done == total || (!every && since_log_.seconds() < 10.0)) return;
    since_log_.restart();
    const double s = epoch_watch_.seconds();
    spdlog::info("epoch {} [{}/{}] loss {:.4f}, {:.0f} events/s, ETA {:.0f} s", epoch, done, total,
                 loss, static_cast<double>(done * batch_) / s,
                 s * static_cast<double>(total - done) / static_cast<double>(done));
  }

  void on_epoch(const train::EpochResult& r, int epochs) override {
    const double eps = static_cast<double>(r.events) / r.train_seconds;
    spdlog::info("epoch {}/{}: loss {:.4f}, {:.2f} s ({:.0f} events/s); {}{}{}{}", r.epoch, epochs,
                 r.loss, r.train_seconds, eps, eval_text("val", r.val), r.val_new.valid ? "; " : "",
                 eval_text("new-node val", r.val_new), train::comm_text(r));
    spdlog::info("{}", stages_text(r));
    spdlog::info("  {}", train::critical_path_text(r));
  }

  void on_early_stop(int epoch, int64_t stale) override {
    spdlog::info("no validation gain for {} epochs: stopping after epoch {}", stale, epoch);
  }

  void on_target(const train::ReachedTarget& r) override {
    spdlog::info("train.target_val_ap reached at epoch {} ({} steps, {:.2f} training s): stopping",
                 r.epoch, r.at.steps, r.at.train_seconds);
  }

  void on_test(const train::FitResult& r) override {
    spdlog::info("best epoch {} (val per-batch AP {:.4f})", r.best_epoch, r.best_val_ap);
    if (target_ > 0 && r.reached.epoch == 0)
      spdlog::info("train.target_val_ap {:.4f} not reached", target_);
    else if (target_ > 0)
      spdlog::info("train.target_val_ap {:.4f} reached at epoch {} ({} steps, {:.2f} training s)",
                   target_, r.reached.epoch, r.reached.at.steps, r.reached.at.train_seconds);
    spdlog::info("{}", eval_text("test", r.test));
    if (r.test_new.valid) spdlog::info("{}", eval_text("test (new nodes)", r.test_new));
  }

 private:
  bool progress_on_;
  int64_t log_every_, batch_;
  double target_;
  int rank_;
  const char* fail_rank_;
  Stopwatch epoch_watch_, since_log_;
};

model::MemoryKind memory_kind(const MemorySection& memory) {
  if (memory.type == MemoryType::none) return model::MemoryKind::none;
  const std::optional<model::MemoryKind> kind = model::find_memory_model(memory.update);
  if (!kind || !model::memory_model(*kind).plan.memory)
    DB_THROW(runtime, "memory.memory_update: a value without a model");
  return *kind;
}

// The model samples one fan-out for every hop.
int neighbours_per_hop(const SamplingSection& sampling) {
  const std::vector<int64_t>& counts = sampling.neighbor;
  require(!counts.empty(), "sampling.neighbor", "needs one count per hop");
  for (int64_t k : counts)
    require(k == counts[0], "sampling.neighbor", "every hop must sample the same count");
  require(counts[0] <= std::numeric_limits<int>::max(), "sampling.neighbor", "too many neighbours");
  return static_cast<int>(counts[0]);
}

// The config key that sets each TgnnConfig field find_problem can name.
const char* model_field_key(const std::string& field) {
  static const std::pair<const char*, const char*> keys[] = {
      {"layers", "gnn.layer"},
      {"neighbours", "sampling.neighbor"},
      {"heads", "gnn.att_head"},
      {"embedding", "gnn.arch"},
      {"memory", "memory.memory_update"},
      {"memory_heads", "memory.attention_head"},
      {"mail_dt_at_event", "memory.mail_time"},
      {"mailbox", "memory.mailbox_size"},
      {"refine", "refine.micro_batches"},
      {"refine_hidden", "refine.hidden"},
      {"coherence_weight", "refine.coherence_weight"}};
  for (const auto& [f, key] : keys)
    if (field == f) return key;
  DB_THROW(runtime, "TgnnConfig.{} has no config key", field);
}

}  // namespace

train::TrainerConfig trainer_config(const RunConfig& c, Device device) {
  train::TrainerConfig t = c.trainer;
  model::TgnnConfig& m = t.model;
  m.memory = memory_kind(c.memory);
  if (m.memory != model::MemoryKind::none)
    require(m.d_mem > 0, "memory.dim_out",
            "a node memory needs a positive width (0 is only for memory.type: none)");
  const bool attention = c.gnn.arch != GnnArch::identity;
  const bool jodie = c.gnn.time_transform == TimeTransform::jodie;
  require(!(attention && jodie), "gnn.time_transform",
          "JODIE's projection replaces the attention: use gnn.arch: identity with it");
  m.embedding = attention ? model::EmbeddingKind::attention
                : jodie   ? model::EmbeddingKind::jodie
                          : model::EmbeddingKind::identity;
  m.attention_style = c.gnn.arch == GnnArch::tgn_attention ? model::AttentionStyle::tgn
                                                           : model::AttentionStyle::tgl;
  m.skip_empty_mailbox = !c.memory.update_empty;
  m.neighbours = neighbours_per_hop(c.sampling);
  if (attention) {
    require(m.layers <= c.sampling.layer, "gnn.layer",
            fmt::format("{} layers need as many sampled hops (sampling.layer is {})", m.layers,
                        c.sampling.layer));
    require(!c.sampling.no_sample, "sampling.no_sample",
            "the attention embedding reads sampled neighbours");
  }
  require(c.sampling.duration == 0, "sampling.duration", "snapshots are not supported; use 0");
  require(c.sampling.history == 1, "sampling.history",
          "memory-based models sample one snapshot; use 1");
  require(c.tgl_train.reorder == 0, "train.reorder", "only 0 is supported");
  require(!c.gnn.use_src_emb && !c.gnn.use_dst_emb, "gnn.use_src_emb", "only false is supported");
  require(t.lr > 0, "train.lr", "the learning rate must be positive");
  require(c.fit.target_val_ap >= 0 && c.fit.target_val_ap <= 1, "train.target_val_ap",
          "an AP is in [0, 1] (0: no target)");
  require(!c.fit.stop_at_target || c.fit.target_val_ap > 0, "train.stop_at_target",
          "needs train.target_val_ap");
  require(!(t.dtype == DType::f64 && device.is_cuda()), "run.dtype",
          "f64 runs on the CPU only; use run.device: cpu");
  t.device = device;
  m.refine = train::refine_mode(t).on;
  require(t.refine_coherence_sample > 0 && t.refine_coherence_sample <= 1,
          "refine.coherence_sample", "must be in (0, 1]");
  if (auto problem = model::find_problem(m))
    DB_THROW(config, "{}: {}", model_field_key(problem->field), problem->why);
  return t;
}

int run_train_command(const OptionRegistry& cfg, const TrainCommand& cmd) {
  const RunConfig& c = cfg.config();
  train::TrainerConfig tc = trainer_config(c, cmd.device);
  tc.comm = cmd.comm;
  std::optional<costmodel::DeviceProfile> profile;  // read first: a bad one fails at once
  if (!cmd.profile.empty()) profile = load_device_profile(cmd.profile);
  Stopwatch watch;
  data::EventStream stream = data::load_events(cmd.data_path, c.load);
  data::keep_first_events(stream, c.data.max_events);
  require(!(c.memory.combine_node_feature && stream.node_dim > 0 &&
            tc.model.memory != model::MemoryKind::none),
          "memory.combine_node_feature", "combining node features is not supported yet");
  data::ChronoSplit split = data::make_split(stream, c.split);
  spdlog::info(
      "data {}: {} events, {} nodes{}, {} edge features, {} node features; loaded in "
      "{:.2f} s",
      cmd.data_path, stream.num_events(), stream.num_nodes, stream.bipartite ? " (bipartite)" : "",
      stream.edge_dim, stream.node_dim, watch.seconds());
  spdlog::info("split ({}): {} train, {} val, {} test events; {} new-node val, {} new-node test",
               data::split_protocol_name(split.protocol), split.train.size(), split.val.size(),
               split.test.size(), split.new_node_val.size(), split.new_node_test.size());

  train::Trainer trainer(stream, split, tc);
  spdlog::info("model: {} parameters on {} ({})", trainer.parameter_count(), cmd.device.str(),
               dtype_name(tc.dtype));
  if (trainer.strategy().ranks() > 1)
    spdlog::info("strategy {} over {} ranks: {}", trainer.strategy().name(),
                 trainer.strategy().ranks(), train::strategy_entry(tc.strategy.name).summary);
  if (cmd.plan_ranks > 0) {
    print_plan(trainer, tc, cmd.plan_ranks, profile);
    return 0;
  }
  const std::string run_dir = cmd.write_files ? cmd.run_dir : std::string();
  if (!cmd.eval_ckpt.empty()) {
    ScoreDump dump(stream);
    if (!cmd.scores.empty())
      trainer.set_score_sink([&dump](const train::ScoredBatch& b) { dump.add(b); });
    auto [test, test_new] = train::test_checkpoint(trainer, cmd.eval_ckpt, run_dir);
    if (!cmd.scores.empty() && cmd.write_files) {
      dump.write(cmd.scores);
      spdlog::info(
          "test scores of {} events ({} in the new-node pass) written to {} "
          "(docs/scores.md)",
          dump.events(), dump.new_node_events(), cmd.scores);
    }
    spdlog::info("{}", eval_text("test", test));
    if (test_new.valid) spdlog::info("{}", eval_text("test (new nodes)", test_new));
    return 0;
  }
  train::FitOptions fit = c.fit;
  fit.run_dir = run_dir;
  fit.resume_dir = cmd.resume_dir;
  fit.config_text = cfg.dump_yaml();
  LoggingObserver observer(c, cmd.comm != nullptr ? cmd.comm->rank() : 0);
  train::fit(trainer, fit, &observer);
  return 0;
}

}  // namespace depbloom::cli
