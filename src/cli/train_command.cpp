// depbloom-train's training command: config -> TrainerConfig, data, and train::fit with a
// logging observer (the progress line, the epoch and stage lines, the final test), or the
// test of one checkpoint for --eval-only.
#include "depbloom/cli/train_command.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
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

std::string comm_text(const train::EpochResult& r) {
  if (r.ranks <= 1) return "";
  const json j = train::comm_json(r);
  std::string s = fmt::format("; {} ranks ({}): {} sync points", r.ranks, r.strategy,
                              j["sync_points"].get<int64_t>());
  for (int k = 0; k < dist::kNumCollectiveKinds; ++k) {
    const auto kind = static_cast<dist::CollectiveKind>(k);
    const dist::CollectiveCounts& c = r.comm[kind];
    if (c.calls == 0) continue;
    s += fmt::format(", {} {} x {:.2f} MB", dist::collective_name(kind), c.calls,
                     static_cast<double>(c.bytes) / 1e6);
  }
  return s;
}

std::string stages_text(const train::EpochResult& r) {
  std::string s = "  stages:";
  for (int i = 0; i < train::kStages; ++i)
    s += fmt::format(" {} {:.2f} s,", train::stage_name(static_cast<train::Stage>(i)),
                     r.stages.seconds[static_cast<size_t>(i)]);
  return s +
         fmt::format(" evaluation {:.2f} s; {:.0f} memory rows per step; host waits/step {:.1f}",
                     r.eval_seconds, r.memory_rows, r.host_waits);
}

// The log lines of a run: progress within an epoch, each epoch's result, the test.
class LoggingObserver final : public train::FitObserver {
 public:
  LoggingObserver(const OptionRegistry& cfg, int rank)
      : progress_on_(cfg.get<bool>("run.progress")),
        log_every_(cfg.get<int64_t>("run.log_every")),
        batch_(cfg.get<int64_t>("train.batch_size")),
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
                 eval_text("new-node val", r.val_new), comm_text(r));
    spdlog::info("{}", stages_text(r));
  }

  void on_early_stop(int epoch, int64_t stale) override {
    spdlog::info("no validation gain for {} epochs: stopping after epoch {}", stale, epoch);
  }

  void on_test(const train::FitResult& r) override {
    spdlog::info("best epoch {} (val per-batch AP {:.4f})", r.best_epoch, r.best_val_ap);
    spdlog::info("{}", eval_text("test", r.test));
    if (r.test_new.valid) spdlog::info("{}", eval_text("test (new nodes)", r.test_new));
  }

 private:
  bool progress_on_;
  int64_t log_every_, batch_;
  int rank_;
  const char* fail_rank_;
  Stopwatch epoch_watch_, since_log_;
};

}  // namespace

train::TrainerConfig trainer_config(const OptionRegistry& cfg, Device device) {
  train::TrainerConfig t;
  auto& m = t.model;
  const auto& type = cfg.get<std::string>("memory.type");
  const auto& update = cfg.get<std::string>("memory.memory_update");
  if (type == "none") {
    m.memory = model::MemoryKind::none;
  } else {
    m.memory = update == "gru"   ? model::MemoryKind::gru
               : update == "rnn" ? model::MemoryKind::rnn
                                 : model::MemoryKind::transformer;
    require(cfg.get<int64_t>("memory.dim_out") > 0, "memory.dim_out",
            "a node memory needs a positive width (0 is only for memory.type: none)");
  }
  const auto& arch = cfg.get<std::string>("gnn.arch");
  const bool attention = arch == "transformer_attention" || arch == "tgn_attention";
  m.attention_style =
      arch == "tgn_attention" ? model::AttentionStyle::tgn : model::AttentionStyle::tgl;
  const bool jodie = cfg.get<std::string>("gnn.time_transform") == "JODIE";
  m.embedding = attention ? model::EmbeddingKind::attention
                : jodie   ? model::EmbeddingKind::jodie
                          : model::EmbeddingKind::identity;
  require(!(attention && jodie), "gnn.time_transform",
          "JODIE's projection replaces the attention: use gnn.arch: identity with it");
  m.d_mem = cfg.get<int64_t>("memory.dim_out");
  m.d_mem_time = cfg.get<int64_t>("memory.dim_time");
  m.d_emb = cfg.get<int64_t>("gnn.dim_out");
  m.d_gnn_time = cfg.get<int64_t>("gnn.dim_time");
  m.layers = static_cast<int>(cfg.get<int64_t>("gnn.layer"));
  m.heads = static_cast<int>(cfg.get<int64_t>("gnn.att_head"));
  m.memory_heads = static_cast<int>(cfg.get<int64_t>("memory.attention_head"));
  m.mailbox = static_cast<int>(cfg.get<int64_t>("memory.mailbox_size"));
  m.dropout = cfg.get<double>("train.dropout");
  m.mail_dt_at_event = cfg.get<std::string>("memory.mail_time") == "event";
  m.skip_empty_mailbox = !cfg.get<bool>("memory.update_empty");
  const auto& nbrs = cfg.get<std::vector<int64_t>>("sampling.neighbor");
  for (int64_t k : nbrs)
    require(k == nbrs[0], "sampling.neighbor", "every hop must sample the same count");
  m.neighbours = static_cast<int>(nbrs[0]);
  if (attention) {
    require(m.layers >= 1, "gnn.layer", "the attention embedding needs at least one layer");
    require(m.layers <= cfg.get<int64_t>("sampling.layer"), "gnn.layer",
            fmt::format("{} layers need as many sampled hops (sampling.layer is {})", m.layers,
                        cfg.get<int64_t>("sampling.layer")));
    require(!cfg.get<bool>("sampling.no_sample"), "sampling.no_sample",
            "the attention embedding reads sampled neighbours");
  }
  require(cfg.get<int64_t>("sampling.duration") == 0, "sampling.duration",
          "snapshots are not supported; use 0");
  require(cfg.get<int64_t>("sampling.history") == 1, "sampling.history",
          "memory-based models sample one snapshot; use 1");
  require(cfg.get<int64_t>("train.reorder") == 0, "train.reorder", "only 0 is supported");
  require(!cfg.get<bool>("gnn.use_src_emb") && !cfg.get<bool>("gnn.use_dst_emb"), "gnn.use_src_emb",
          "only false is supported");
  t.uniform_sampling = cfg.get<std::string>("sampling.strategy") == "uniform";
  t.prop_time = cfg.get<bool>("sampling.prop_time");
  t.standardise_time = cfg.get<std::string>("gnn.time_norm") == "standard";
  t.deliver_to_neighbours = cfg.get<std::string>("memory.deliver_to") == "neighbors";
  t.batch_size = cfg.get<int64_t>("train.batch_size");
  t.eval_batch_size = cfg.get<int64_t>("eval.batch_size");
  t.lr = cfg.get<double>("train.lr");
  require(t.lr > 0, "train.lr", "the learning rate must be positive");
  t.weight_decay = cfg.get<double>("train.weight_decay");
  t.eval_negatives = static_cast<int32_t>(cfg.get<int64_t>("eval.negatives"));
  t.eval_strategy =
      graph::parse_eval_negative_strategy(cfg.get<std::string>("eval.negative_strategy"));
  t.new_nodes = cfg.get<bool>("eval.new_nodes");
  t.max_batches = cfg.get<int64_t>("run.max_batches");
  t.seed = static_cast<uint64_t>(cfg.get<int64_t>("run.seed"));
  t.strategy = cfg.get<std::string>("strategy.name");
  t.device = device;
  model::validate(m);
  return t;
}

int run_train_command(OptionRegistry& cfg, const TrainCommand& cmd) {
  train::TrainerConfig tc = trainer_config(cfg, cmd.device);
  tc.comm = cmd.comm;

  data::LoadOptions load;
  load.format = cfg.get<std::string>("data.format");
  load.drop_self_loops = cfg.get<bool>("data.drop_self_loops");
  load.use_cache = cfg.get<bool>("data.cache");
  Stopwatch watch;
  data::EventStream stream = data::load_events(cmd.data_path, load);
  data::keep_first_events(stream, cfg.get<int64_t>("data.max_events"));
  require(!(cfg.get<bool>("memory.combine_node_feature") && stream.node_dim > 0 &&
            tc.model.memory != model::MemoryKind::none),
          "memory.combine_node_feature", "combining node features is not supported yet");
  data::SplitSpec spec;
  spec.protocol = data::parse_split_protocol(cfg.get<std::string>("data.protocol"));
  spec.seed = tc.seed;
  data::ChronoSplit split = data::make_split(stream, spec);
  spdlog::info("data {}: {} events, {} nodes{}, {} edge features; loaded in {:.2f} s",
               cmd.data_path, stream.num_events(), stream.num_nodes,
               stream.bipartite ? " (bipartite)" : "", stream.edge_dim, watch.seconds());
  spdlog::info("split ({}): {} train, {} val, {} test events; {} new-node val, {} new-node test",
               data::split_protocol_name(split.protocol), split.train.size(), split.val.size(),
               split.test.size(), split.new_node_val.size(), split.new_node_test.size());

  train::Trainer trainer(stream, split, tc);
  spdlog::info("model: {} parameters on {}", trainer.parameter_count(), cmd.device.str());
  if (trainer.strategy().ranks() > 1)
    spdlog::info("strategy {} over {} ranks: {}", trainer.strategy().name(),
                 trainer.strategy().ranks(), train::strategy_entry(tc.strategy).summary);
  const std::string run_dir = cmd.write_files ? cmd.run_dir : std::string();
  if (!cmd.eval_ckpt.empty()) {
    auto [test, test_new] = train::test_checkpoint(trainer, cmd.eval_ckpt, run_dir);
    spdlog::info("{}", eval_text("test", test));
    if (test_new.valid) spdlog::info("{}", eval_text("test (new nodes)", test_new));
    return 0;
  }
  train::FitOptions fit;
  fit.epochs = static_cast<int>(cfg.get<int64_t>("train.epoch"));
  fit.patience = cfg.get<int64_t>("train.patience");
  fit.run_dir = run_dir;
  fit.checkpoints = cfg.get<bool>("run.checkpoint");
  fit.step_log = cfg.get<bool>("run.step_log");
  fit.resume_dir = cmd.resume_dir;
  fit.config_text = cfg.dump_yaml();
  LoggingObserver observer(cfg, cmd.comm != nullptr ? cmd.comm->rank() : 0);
  train::fit(trainer, fit, &observer);
  return 0;
}

}  // namespace depbloom::cli
