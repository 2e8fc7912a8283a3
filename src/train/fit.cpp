// fit(): epochs, validation, early stopping, checkpoints and the run's JSON lines.
#include "depbloom/train/fit.h"

#include <cstring>
#include <filesystem>

#include "depbloom/train/run_log.h"

namespace depbloom::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string in_dir(const std::string& dir, const char* file) {
  return (fs::path(dir) / file).string();
}

// Where the run stands: the best epoch so far and its state.
struct BestSoFar {
  int epoch = 0;
  double val_ap = -1.0;
  int64_t stale = 0;  // epochs since it
  Checkpoint state;
};

// --resume: the trainer continues after the last checkpointed epoch; returns the first
// epoch to run.
int resume(Trainer& trainer, const std::string& dir, BestSoFar& best) {
  Checkpoint last = read_checkpoint(in_dir(dir, "last.ckpt"));
  trainer.load(last);
  const int first = static_cast<int>(last.epoch) + 1;
  const std::string best_file = in_dir(dir, "best.ckpt");
  if (fs::exists(best_file)) {
    best.state = read_checkpoint(best_file);
    best.epoch = static_cast<int>(best.state.epoch);
    const CheckpointBlob& ap = best.state.get("meta.val_ap", DType::f64, {1});
    std::memcpy(&best.val_ap, ap.bytes.data(), sizeof(double));
    best.stale = first - 1 - best.epoch;
  }
  return first;
}

void log_steps(const std::string& run_dir, int epoch, const std::vector<double>& trace,
               size_t from) {
  std::vector<json> lines;
  for (size_t i = from; i < trace.size(); ++i)
    lines.push_back({{"epoch", epoch}, {"step", i - from + 1}, {"loss", trace[i]}});
  append_json_lines(in_dir(run_dir, "steps.jsonl"), lines);
}

}  // namespace

FitResult fit(Trainer& trainer, const FitOptions& opts, FitObserver* observer) {
  FitObserver quiet;
  FitObserver& obs = observer != nullptr ? *observer : quiet;
  const bool files = !opts.run_dir.empty();
  BestSoFar best;
  int first = 1;
  if (!opts.resume_dir.empty()) {
    first = resume(trainer, opts.resume_dir, best);
    obs.on_resume(opts.resume_dir, first - 1, best.epoch);
  }
  FitResult result;
  for (int epoch = first; epoch <= opts.epochs; ++epoch) {
    const size_t steps_before = trainer.loss_trace().size();
    const EpochResult r = trainer.run_epoch(epoch, [&](int64_t done, int64_t total, double loss) {
      obs.on_progress(epoch, done, total, loss);
    });
    result.epochs.push_back(r);
    if (files && opts.step_log) log_steps(opts.run_dir, epoch, trainer.loss_trace(), steps_before);
    obs.on_epoch(r, opts.epochs);
    if (files) append_json_line(in_dir(opts.run_dir, "metrics.jsonl"), epoch_json(r));
    const double val_ap = r.val.valid ? r.val.batch_mean.ap : -r.loss;
    Checkpoint now = trainer.save(epoch, opts.config_text);
    if (val_ap > best.val_ap) {
      best.val_ap = val_ap, best.epoch = epoch, best.stale = 0;
      best.state = now;
      best.state.add("meta.val_ap", DType::f64, {1}, &best.val_ap, sizeof(double));
      if (files && opts.checkpoints)
        write_checkpoint(in_dir(opts.run_dir, "best.ckpt"), best.state);
    } else {
      ++best.stale;
    }
    if (files && opts.checkpoints) write_checkpoint(in_dir(opts.run_dir, "last.ckpt"), now);
    if (opts.patience > 0 && best.stale >= opts.patience) {
      obs.on_early_stop(epoch, best.stale);
      break;
    }
  }
  if (best.epoch > 0) trainer.load(best.state);
  std::tie(result.test, result.test_new) = trainer.test();
  result.best_epoch = best.epoch;
  result.best_val_ap = best.val_ap;
  obs.on_test(result);
  if (files)
    append_json_line(in_dir(opts.run_dir, "metrics.jsonl"),
                     {{"split", "test"},
                      {"best_epoch", best.epoch},
                      {"test", eval_json(result.test)},
                      {"test_new_nodes", eval_json(result.test_new)}});
  return result;
}

std::pair<EvalResult, EvalResult> test_checkpoint(Trainer& trainer, const std::string& checkpoint,
                                                  const std::string& run_dir) {
  const Checkpoint c = read_checkpoint(checkpoint);
  trainer.load(c);
  auto tested = trainer.test();
  if (!run_dir.empty())
    append_json_line(in_dir(run_dir, "metrics.jsonl"),
                     {{"split", "test"},
                      {"checkpoint", checkpoint},
                      {"epoch", c.epoch},
                      {"test", eval_json(tested.first)},
                      {"test_new_nodes", eval_json(tested.second)}});
  return tested;
}

}  // namespace depbloom::train
