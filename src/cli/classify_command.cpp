// depbloom-train --classify: the checkpoint's model frozen, every event's source embedded
// once, then the decoder trained on the stored rows and its ROC-AUC written per epoch.
#include "depbloom/cli/classify_command.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/node_labels.h"
#include "depbloom/data/split.h"
#include "depbloom/train/checkpoint.h"
#include "depbloom/train/node_classifier.h"
#include "depbloom/train/run_log.h"

namespace depbloom::cli {
namespace {

constexpr const char* kTask = "node_classification";

train::ClassifySettings classify_settings(const RunConfig& c) {
  train::ClassifySettings s = c.classify;
  if (!(s.lr > 0)) DB_THROW(config, "classify.lr: the learning rate must be positive");
  if (s.hidden.empty()) DB_THROW(config, "classify.hidden: needs at least one hidden width");
  if (!(s.dropout >= 0 && s.dropout < 1))
    DB_THROW(config, "classify.dropout: {} is not a probability in [0, 1)", s.dropout);
  s.seed = c.trainer.seed;
  return s;
}

std::string rows_text(const train::LabelledRows& rows) {
  return fmt::format("{} ({} positive)", rows.size(), rows.positives());
}

}  // namespace

int run_classify_command(const OptionRegistry& cfg, const TrainCommand& cmd) {
  if (cmd.comm != nullptr) DB_THROW(usage, "--classify runs in one process: not under mpirun");
  const RunConfig& c = cfg.config();
  const train::ClassifySettings settings = classify_settings(c);
  const train::TrainerConfig tc = trainer_config(c, cmd.device);
  Stopwatch watch;
  data::EventStream stream = data::load_events(cmd.data_path, c.load);
  data::keep_first_events(stream, c.data.max_events);
  const std::string label_source = settings.labels.empty() ? cmd.data_path : settings.labels;
  const std::vector<int8_t> labels = data::event_labels(stream, settings.labels);
  const data::ChronoSplit split = data::make_split(stream, c.split);
  const train::ClassifyRows rows = train::classify_rows(split, labels, label_source);
  spdlog::info("classify: {} events of {}; labelled events: train {}, val {}, test {}",
               stream.num_events(), cmd.data_path, rows_text(rows.train), rows_text(rows.val),
               rows_text(rows.test));

  train::Trainer trainer(stream, split, tc);
  trainer.load(read_checkpoint(cmd.classify_ckpt));
  Stopwatch embed_watch;
  const train::EmbeddingTable emb = train::source_embeddings(trainer, tc.batch_size);
  spdlog::info("classify: {} frozen source embeddings of width {} in {:.2f} s (batch {})",
               emb.rows(), emb.dim, embed_watch.seconds(), tc.batch_size);

  const std::string metrics =
      cmd.write_files ? (std::filesystem::path(cmd.run_dir) / "metrics.jsonl").string() : "";
  const train::ClassifyResult r =
      train::train_classifier(emb, rows, settings, [&](const train::ClassifyEpoch& e) {
        spdlog::info("classify epoch {}/{}: loss {:.4f}, val ROC-AUC {:.4f} ({:.2f} s)", e.epoch,
                     settings.epochs, e.loss, e.val_auc, e.seconds);
        if (!metrics.empty())
          train::append_json_line(metrics, {{"task", kTask},
                                            {"split", "val"},
                                            {"epoch", e.epoch},
                                            {"auc", e.val_auc},
                                            {"loss", e.loss},
                                            {"seconds", e.seconds}});
      });
  spdlog::info("classify: best epoch {} (val ROC-AUC {:.4f}); test ROC-AUC {:.4f}; {:.2f} s in all",
               r.best_epoch, r.best_val_auc, r.test_auc, watch.seconds());
  if (!metrics.empty())
    train::append_json_line(metrics, {{"task", kTask},
                                      {"split", "test"},
                                      {"epoch", r.best_epoch},
                                      {"auc", r.test_auc},
                                      {"val_auc", r.best_val_auc},
                                      {"checkpoint", cmd.classify_ckpt},
                                      {"labels", label_source},
                                      {"test_events", rows.test.size()},
                                      {"test_positives", rows.test.positives()}});
  return 0;
}

}  // namespace depbloom::cli
