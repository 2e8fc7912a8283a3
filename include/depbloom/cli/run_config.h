// RunConfig: everything one depbloom-train run is configured with, as typed fields. The
// option registry (options.h, filled by config_schema.cpp) binds each config key to one
// field here, and a field's initialiser is its key's default. Keys whose field is a
// library setting (TrainerConfig, LoadOptions, SplitSpec, FitOptions) bind to it
// directly; the sections below hold what has no such field: TGL's layout, which the cli
// turns into the model's settings, and the run's own switches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/core/name_table.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/train/fit.h"
#include "depbloom/train/node_classifier.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {

enum class MemoryType { node, none };
enum class MailCombine { last };
enum class GnnArch { transformer_attention, tgn_attention, identity };
enum class TimeTransform { none, jodie };

// TGL's sampling section; the trainer reads one fan-out for every hop.
struct SamplingSection {
  int64_t layer = 1;
  std::vector<int64_t> neighbor = {10};
  int64_t history = 1;
  bool no_sample = false;
  bool no_neg = false;
  int64_t duration = 0;
  int64_t num_thread = 0;
};

// TGL's memory section: kind and updater become model::MemoryKind.
struct MemorySection {
  MemoryType type = MemoryType::node;
  std::string update = "gru";  // a memory model's name (model/memory_model.h)
  bool update_empty = false;
  MailCombine mail_combine = MailCombine::last;
  bool combine_node_feature = false;
};

// TGL's gnn section: arch and time_transform become the model's embedding.
struct GnnSection {
  GnnArch arch = GnnArch::tgn_attention;
  TimeTransform time_transform = TimeTransform::none;
  bool use_src_emb = false;
  bool use_dst_emb = false;
};

// TGL's train keys that DepBloom reads but does not act on.
struct TglTrainSection {
  double att_dropout = 0.1;
  bool all_on_gpu = false;
  int64_t reorder = 0;
};

struct DataSection {
  std::string path;  // empty: the shipped WIKI stream
  int64_t max_events = 0;
};

struct RunSection {
  std::string device = "auto";
  int64_t threads = 0;
  bool tf32 = false;  // cuBLAS's TF32 tensor-op math for f32 GEMMs (backend::set_tf32)
  std::string out = "runs/<time>";
  int64_t log_every = 100;
  bool progress = true;
};

struct DistSection {
  std::string communicator = "auto";  // "auto" or a dist::CommunicatorKind's name
  double timeout_s = 600;
};

// depbloom-stream (docs/streaming.md).
struct StreamSection {
  int64_t batch_size = 200;          // events per applied batch
  int64_t max_delay_ms = 0;          // apply a part batch after this wait (0: only when full)
  int64_t new_node_capacity = 1000;  // node-state rows for ids unseen in the loaded stream
  int64_t event_capacity = 100000;   // events the session can append
};

// The CLI's trainer defaults: the library's, with the pipeline on (it gives the serial
// step's results bit for bit; TrainerConfig itself leaves it off for direct users).
inline train::TrainerConfig cli_trainer_defaults() {
  train::TrainerConfig t;
  t.pipeline.enabled = true;
  return t;
}

struct RunConfig {
  train::TrainerConfig trainer = cli_trainer_defaults();
  train::FitOptions fit;
  data::LoadOptions load;
  data::SplitSpec split;
  SamplingSection sampling;
  MemorySection memory;
  GnnSection gnn;
  TglTrainSection tgl_train;
  DataSection data;
  RunSection run;
  DistSection dist;
  train::ClassifySettings classify;  // --classify (docs/node_classification.md)
  StreamSection stream;              // depbloom-stream (docs/streaming.md)
};

// The names the config gives each choice.
const NameTable<MemoryType>& memory_type_names();
const NameTable<MailCombine>& mail_combine_names();
const NameTable<GnnArch>& gnn_arch_names();
const NameTable<TimeTransform>& time_transform_names();

}  // namespace depbloom::cli
