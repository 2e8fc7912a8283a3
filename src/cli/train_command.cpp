// depbloom-train's training command: config -> TrainerConfig, the epoch loop with its
// progress line, metrics.jsonl, checkpoints (last and best), early stopping, the final
// test with the best checkpoint, --resume and --eval-only.
#include "depbloom/cli/train_command.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"

namespace depbloom::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void require(bool ok, const char* key, const std::string& why) {
  if (!ok) DB_THROW(config, "{}: {}", key, why);
}

json eval_json(const train::EvalResult& r) {
  if (!r.valid) return nullptr;
  json j = {{"events", r.events},
            {"ap", r.whole.ap},
            {"auc", r.whole.auc},
            {"ap_batch_mean", r.batch_mean.ap},
            {"auc_batch_mean", r.batch_mean.auc},
            {"seconds", r.seconds}};
  if (r.mrr >= 0) j["mrr"] = r.mrr;
  return j;
}

std::string eval_text(const char* name, const train::EvalResult& r) {
  if (!r.valid) return "";
  std::string s = fmt::format("{} AP {:.4f} AUC {:.4f} (per-batch mean AP {:.4f} AUC {:.4f})", name,
                              r.whole.ap, r.whole.auc, r.batch_mean.ap, r.batch_mean.auc);
  if (r.mrr >= 0) s += fmt::format(" MRR {:.4f}", r.mrr);
  return s;
}

// The epoch's collectives: sync points (blocking calls, on the critical path) and, per kind,
// calls and bytes.
json comm_json(const train::EpochResult& r) {
  json j = {{"ranks", r.ranks},
            {"strategy", r.strategy},
            {"sync_points", r.comm.total_calls()},
            {"local_events", r.local_events},
            {"exchanged_rows", r.exchanged_rows},
            {"exchanged_mails", r.exchanged_mails}};
  int64_t nonblocking = 0;
  for (int k = 0; k < dist::kNumCollectiveKinds; ++k) {
    const auto kind = static_cast<dist::CollectiveKind>(k);
    const dist::CollectiveCounts& c = r.comm[kind];
    nonblocking += c.nonblocking;
    j[dist::collective_name(kind)] = {
        {"calls", c.calls}, {"nonblocking", c.nonblocking}, {"bytes", c.bytes}};
  }
  j["sync_points"] = r.comm.total_calls() - nonblocking;
  return j;
}

std::string comm_text(const train::EpochResult& r) {
  if (r.ranks <= 1) return "";
  const json j = comm_json(r);
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

void append_line(const fs::path& file, const json& line) {
  std::ofstream out(file, std::ios::app);
  out << line.dump() << "\n";
  if (!out) DB_THROW(runtime, "cannot write {}", file.string());
}

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
  const fs::path run_dir = cmd.run_dir;
  const fs::path metrics = run_dir / "metrics.jsonl";
  train::TrainerConfig tc = trainer_config(cfg, cmd.device);
  tc.comm = cmd.comm;
  const bool writer = cmd.write_files;

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
  const std::string config_text = cfg.dump_yaml();

  if (!cmd.eval_ckpt.empty()) {
    Checkpoint c = read_checkpoint(cmd.eval_ckpt);
    trainer.load(c);
    auto [test, test_new] = trainer.test();
    spdlog::info("{}", eval_text("test", test));
    if (test_new.valid) spdlog::info("{}", eval_text("test (new nodes)", test_new));
    if (writer)
      append_line(metrics, {{"split", "test"},
                            {"checkpoint", cmd.eval_ckpt},
                            {"epoch", c.epoch},
                            {"test", eval_json(test)},
                            {"test_new_nodes", eval_json(test_new)}});
    return 0;
  }

  const int epochs = static_cast<int>(cfg.get<int64_t>("train.epoch"));
  const int64_t patience = cfg.get<int64_t>("train.patience");
  const bool save_files = cfg.get<bool>("run.checkpoint");
  const bool progress_on = cfg.get<bool>("run.progress");
  const int64_t log_every = cfg.get<int64_t>("run.log_every");
  const bool step_log = cfg.get<bool>("run.step_log");
  int first_epoch = 1, best_epoch = 0, stale = 0;
  double best_ap = -1.0;
  Checkpoint best;
  if (!cmd.resume_dir.empty()) {
    Checkpoint last = read_checkpoint((fs::path(cmd.resume_dir) / "last.ckpt").string());
    trainer.load(last);
    first_epoch = static_cast<int>(last.epoch) + 1;
    const fs::path best_file = fs::path(cmd.resume_dir) / "best.ckpt";
    if (fs::exists(best_file)) {
      best = read_checkpoint(best_file.string());
      best_epoch = static_cast<int>(best.epoch);
      const CheckpointBlob& ap = best.get("meta.val_ap", DType::f64, {1});
      std::memcpy(&best_ap, ap.bytes.data(), sizeof(double));
      stale = first_epoch - 1 - best_epoch;
    }
    spdlog::info("resuming {} after epoch {} (best so far: epoch {})", cmd.resume_dir,
                 first_epoch - 1, best_epoch);
  }

  // For the failure test (tests/CMakeLists.txt): this rank throws after its second step.
  const char* fail_rank = std::getenv("DEPBLOOM_TEST_FAIL_RANK");
  const int my_rank = cmd.comm != nullptr ? cmd.comm->rank() : 0;
  for (int epoch = first_epoch; epoch <= epochs; ++epoch) {
    Stopwatch since_log;
    auto progress = [&](int64_t done, int64_t total, double loss) {
      if (fail_rank != nullptr && std::atoi(fail_rank) == my_rank && done == 2)
        DB_THROW(runtime, "failing on purpose (DEPBLOOM_TEST_FAIL_RANK={}) in epoch {}", fail_rank,
                 epoch);
      const bool every = log_every > 0 && done % log_every == 0;
      if (!progress_on || done == total || (!every && since_log.seconds() < 10.0)) return;
      since_log.restart();
      const double s = watch.seconds();
      spdlog::info("epoch {} [{}/{}] loss {:.4f}, {:.0f} events/s, ETA {:.0f} s", epoch, done,
                   total, loss, static_cast<double>(done * tc.batch_size) / s,
                   s * static_cast<double>(total - done) / static_cast<double>(done));
    };
    watch.restart();
    const size_t steps_before = trainer.loss_trace().size();
    train::EpochResult r = trainer.run_epoch(epoch, progress);
    if (writer && step_log) {
      const auto& trace = trainer.loss_trace();
      for (size_t i = steps_before; i < trace.size(); ++i)
        append_line(run_dir / "steps.jsonl",
                    {{"epoch", epoch}, {"step", i - steps_before + 1}, {"loss", trace[i]}});
    }
    const double eps = static_cast<double>(r.events) / r.train_seconds;
    spdlog::info("epoch {}/{}: loss {:.4f}, {:.2f} s ({:.0f} events/s); {}{}{}{}", epoch, epochs,
                 r.loss, r.train_seconds, eps, eval_text("val", r.val), r.val_new.valid ? "; " : "",
                 eval_text("new-node val", r.val_new), comm_text(r));
    spdlog::info(
        "  stages: sample {:.2f} s, gather {:.2f} s, memory update {:.2f} s, forward "
        "{:.2f} s, backward {:.2f} s, optimiser {:.2f} s, write-back {:.2f} s, "
        "evaluation {:.2f} s; {:.0f} memory rows per batch",
        r.stages.sample, r.stages.gather, r.stages.memory_update, r.stages.forward,
        r.stages.backward, r.stages.optimiser, r.stages.write_back, r.eval_seconds, r.memory_rows);
    if (writer)
      append_line(metrics, {{"epoch", epoch},
                            {"loss", r.loss},
                            {"train_events", r.events},
                            {"train_seconds", r.train_seconds},
                            {"events_per_s", eps},
                            {"memory_rows_per_batch", r.memory_rows},
                            {"val", eval_json(r.val)},
                            {"val_new_nodes", eval_json(r.val_new)},
                            {"eval_seconds", r.eval_seconds},
                            {"stage_s",
                             {{"sample", r.stages.sample},
                              {"gather", r.stages.gather},
                              {"memory_update", r.stages.memory_update},
                              {"forward", r.stages.forward},
                              {"backward", r.stages.backward},
                              {"optimiser", r.stages.optimiser},
                              {"write_back", r.stages.write_back},
                              {"evaluation", r.eval_seconds}}},
                            {"comm", comm_json(r)}});
    const double val_ap = r.val.valid ? r.val.batch_mean.ap : -r.loss;
    const bool improved = val_ap > best_ap;
    Checkpoint now = trainer.save(epoch, config_text);
    if (improved) {
      best_ap = val_ap, best_epoch = epoch, stale = 0;
      best = now;
      best.add("meta.val_ap", DType::f64, {1}, &best_ap, sizeof(double));
      if (save_files && writer) write_checkpoint((run_dir / "best.ckpt").string(), best);
    } else {
      ++stale;
    }
    if (save_files && writer) write_checkpoint((run_dir / "last.ckpt").string(), now);
    if (patience > 0 && stale >= patience) {
      spdlog::info("no validation gain for {} epochs: stopping after epoch {}", stale, epoch);
      break;
    }
  }

  if (best_epoch > 0) trainer.load(best);
  auto [test, test_new] = trainer.test();
  spdlog::info("best epoch {} (val per-batch AP {:.4f})", best_epoch, best_ap);
  spdlog::info("{}", eval_text("test", test));
  if (test_new.valid) spdlog::info("{}", eval_text("test (new nodes)", test_new));
  if (writer)
    append_line(metrics, {{"split", "test"},
                          {"best_epoch", best_epoch},
                          {"test", eval_json(test)},
                          {"test_new_nodes", eval_json(test_new)}});
  return 0;
}

}  // namespace depbloom::cli
