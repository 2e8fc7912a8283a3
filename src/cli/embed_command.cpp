// depbloom-embed: checkpoint + config -> the trainer -> replay through T -> the chosen rows
// of the node state, written as .npy files and a manifest through an NpyFolder.
#include "depbloom/cli/embed_command.h"

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/cli/exit_on_error.h"
#include "depbloom/cli/file_sha256.h"
#include "depbloom/cli/node_list.h"
#include "depbloom/cli/npy_folder.h"
#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/train/checkpoint.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {
using nlohmann::json;

namespace {

// The checkpoint's own config, made to replay any event: one random negative per event
// (negatives write no node state, and TGB's fixed ones cover only its val and test events).
OptionRegistry replay_config(const Checkpoint& ckpt, const EmbedRequest& req) {
  OptionRegistry cfg = depbloom_options();
  cfg.load_yaml_string(ckpt.config_text, req.checkpoint + " (its saved config)");
  cfg.set_value("eval.negatives", int64_t{1});
  cfg.set_value("eval.negative_strategy", std::string("random"));
  cfg.set_value("data.tgb_negatives", std::string());
  if (!req.data.empty()) cfg.set_value("data.path", req.data);
  if (cfg.config().data.path.empty())
    DB_THROW(usage,
             "{}: its config names no data.path (the run used the shipped stream): pass --data",
             req.checkpoint);
  return cfg;
}

const char* embedding_name(model::EmbeddingKind kind) {
  switch (kind) {
    case model::EmbeddingKind::attention:
      return "attention";
    case model::EmbeddingKind::jodie:
      return "jodie";
    case model::EmbeddingKind::identity:
      break;
  }
  return "identity";
}

// The state's rows of `nodes` ([n, width] of a host copy), in the state's dtype.
std::vector<uint8_t> gather_rows(const Tensor& device_values, const std::vector<int32_t>& nodes) {
  OwnedTensor host(device_values.dtype(), device_values.shape());
  ops::copy(host, device_values);
  const size_t row_bytes =
      device_values.rank() > 1
          ? static_cast<size_t>(device_values.shape().dims[1]) * dtype_size(device_values.dtype())
          : dtype_size(device_values.dtype());
  std::vector<uint8_t> out(nodes.size() * row_bytes);
  const auto* base = static_cast<const uint8_t*>(host.view().raw());
  for (size_t i = 0; i < nodes.size(); ++i)
    std::memcpy(out.data() + i * row_bytes, base + static_cast<size_t>(nodes[i]) * row_bytes,
                row_bytes);
  return out;
}

data::NpyDtype npy_dtype(DType dtype) {
  if (dtype == DType::f64) return data::NpyDtype::f8;
  if (dtype != DType::f32) DB_THROW(runtime, "node state in {}: no .npy type", dtype_name(dtype));
  return data::NpyDtype::f4;
}

// The embedding each node would have as the source of an event at `at`: depbloom-stream's
// query `?,v,v,at`, scored as rows after the stream's events (so never among the
// neighbours) in batches of eval.batch_size, without writes. Host bytes of [n, width].
std::vector<uint8_t> embeddings_at(train::Trainer& trainer, data::EventStream& stream,
                                   const std::vector<int32_t>& nodes, double at, int64_t& width) {
  const size_t base = stream.src.size();
  const auto batch = static_cast<size_t>(trainer.config().eval_batch_size);
  std::vector<uint8_t> out;
  std::vector<int64_t> rows;
  auto trim = [&] {
    stream.src.resize(base), stream.dst.resize(base), stream.ts.resize(base);
    stream.event_id.resize(base);
  };
  for (size_t begin = 0; begin < nodes.size(); begin += batch) {
    const size_t end = std::min(nodes.size(), begin + batch);
    rows.clear();
    for (size_t i = begin; i < end; ++i) {
      rows.push_back(static_cast<int64_t>(stream.src.size()));
      stream.src.push_back(nodes[i]), stream.dst.push_back(nodes[i]), stream.ts.push_back(at);
      stream.event_id.push_back(-1);
    }
    try {
      trainer.stream_batch(rows, {}, 0, false);
    } catch (...) {
      trim();
      throw;
    }
    trim();
    // The sources' block of the pass's embeddings (sources, then destinations).
    const Tensor sources = trainer.last_step().emb.rows(0, static_cast<int64_t>(end - begin));
    width = sources.shape().dims[1];
    OwnedTensor host(sources.dtype(), sources.shape());
    ops::copy(host, sources);
    const auto* p = static_cast<const uint8_t*>(host.view().raw());
    out.insert(out.end(), p, p + host.view().numel() * dtype_size(sources.dtype()));
  }
  return out;
}

// The arrays and manifest.json of the chosen rows after the replay.
void write_export(const EmbedRequest& req, const std::string& sha, const OptionRegistry& cfg,
                  train::Trainer& trainer, data::EventStream& stream,
                  const std::vector<int32_t>& nodes, int64_t events) {
  const data::EventStream& s = trainer.stream();
  model::NodeState& state = trainer.state();
  const auto n = static_cast<int64_t>(nodes.size());
  std::vector<int64_t> ids(nodes.size());
  std::vector<uint8_t> is_item(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    ids[i] = original_id(s, nodes[i]);
    is_item[i] = s.bipartite && nodes[i] >= s.num_users;
  }
  const data::NpyDtype values = npy_dtype(state.dtype());
  const std::vector<uint8_t> memory = gather_rows(state.memory(), nodes);
  const std::vector<uint8_t> last = gather_rows(state.last_update(), nodes);
  NpyFolder out(req.out);
  out.add_npy("ids.npy", data::NpyDtype::i8, {n}, ids.data());
  out.add_npy("is_item.npy", data::NpyDtype::u1, {n}, is_item.data());
  out.add_npy("memory.npy", values, {n, state.memory_dim()}, memory.data());
  out.add_npy("last_update.npy", values, {n}, last.data());
  int64_t d_emb = 0;
  const std::vector<uint8_t> embedding = embeddings_at(trainer, stream, nodes, req.at, d_emb);
  out.add_npy("embedding.npy", values, {n, d_emb}, embedding.data());
  const std::string v = data::npy_descr(values);
  const json manifest = {{"format", "depbloom-embed 1"},
                         {"checkpoint", req.checkpoint},
                         {"checkpoint_sha256", sha},
                         {"model",
                          {{"memory_update", cfg.config().memory.update},
                           {"embedding", embedding_name(trainer.config().model.embedding)},
                           {"memory_dim", state.memory_dim()},
                           {"embedding_dim", d_emb}}},
                         {"data", cfg.config().data.path},
                         {"at", req.at},
                         {"events_replayed", events},
                         {"stream_events", s.num_events()},
                         {"eval_batch_size", trainer.config().eval_batch_size},
                         {"bipartite", s.bipartite},
                         {"nodes", n},
                         {"files",
                          {{"ids.npy", {{"dtype", "<i8"}, {"shape", {n}}}},
                           {"is_item.npy", {{"dtype", "|u1"}, {"shape", {n}}}},
                           {"memory.npy", {{"dtype", v}, {"shape", {n, state.memory_dim()}}}},
                           {"last_update.npy", {{"dtype", v}, {"shape", {n}}}},
                           {"embedding.npy", {{"dtype", v}, {"shape", {n, d_emb}}}}}}};
  out.add_text("manifest.json", manifest.dump(2) + "\n");
  out.commit();
}

}  // namespace

double parse_time(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double t = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(t))
    DB_THROW(usage, "--at '{}': expected a finite time in the stream's units", text);
  return t;
}

EmbedResult export_embeddings(const EmbedRequest& req) {
  const Checkpoint ckpt = read_checkpoint(req.checkpoint);
  const std::string sha = file_sha256(req.checkpoint);
  const OptionRegistry cfg = replay_config(ckpt, req);
  const RunConfig& c = cfg.config();
  const train::TrainerConfig tc = trainer_config(c, Device::cpu());
  data::EventStream stream = data::load_events(c.data.path, c.load);
  data::keep_first_events(stream, c.data.max_events);
  std::vector<int32_t> nodes;
  if (req.nodes_file.empty()) {
    nodes.resize(static_cast<size_t>(stream.num_nodes));
    std::iota(nodes.begin(), nodes.end(), 0);
  } else {
    nodes = read_node_list(stream, req.nodes_file);  // before the (slow) replay
  }
  const data::ChronoSplit split = data::make_split(stream, c.split);
  train::Trainer trainer(stream, split, tc);
  trainer.load(ckpt);
  const auto end = static_cast<int64_t>(
      std::upper_bound(stream.ts.begin(), stream.ts.end(), req.at) - stream.ts.begin());
  std::vector<int64_t> events(static_cast<size_t>(end));
  std::iota(events.begin(), events.end(), int64_t{0});
  trainer.replay(events, tc.eval_batch_size);
  write_export(req, sha, cfg, trainer, stream, nodes, end);
  return {end, static_cast<int64_t>(nodes.size())};
}

int run_embed(int argc, char** argv) {
  CLI::App app{
      "depbloom-embed: a checkpoint's node memory and temporal embeddings at a time, as .npy "
      "files"};
  EmbedRequest req;
  std::string at;
  int64_t threads = 0;
  app.add_option("checkpoint", req.checkpoint, "a depbloom-train checkpoint (.ckpt)")->required();
  app.add_option("--at", at, "replay the events with time <= T (the stream's time units)")
      ->required();
  app.add_option("--nodes", req.nodes_file,
                 "file of original node ids, one per line (user:ID / item:ID for bipartite "
                 "streams); default: every node");
  app.add_option("--out", req.out, "output folder (replaced whole)")->required();
  app.add_option("--data", req.data, "event stream to replay (default: the checkpoint's)");
  app.add_option("--threads", threads, "CPU threads, 0 = all cores");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : exit_code(ErrorKind::usage);
  }
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  return exit_on_error([&] {
    req.at = parse_time(at);
    if (threads > 0) backend::set_cpu_threads(static_cast<int>(threads));
    const EmbedResult r = export_embeddings(req);
    spdlog::info("depbloom-embed: {} events replayed (time <= {}); {} nodes written to {}",
                 r.events, req.at, r.nodes, req.out);
    return 0;
  });
}

}  // namespace depbloom::cli
