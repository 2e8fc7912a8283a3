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

// Where the run stands: the best epoch so far and its state, the totals and the target.
struct BestSoFar {
  int epoch = 0;
  double val_ap = -1.0;
  int64_t stale = 0;  // epochs since it
  Checkpoint state;
  RunTotals totals;
  ReachedTarget reached;
};

// The totals and the target's epoch travel in every checkpoint, so a resumed run counts on.
constexpr const char* kTotalsBlob = "fit.totals";    // f64 [seconds, steps, events]
constexpr const char* kReachedBlob = "fit.reached";  // f64 [epoch, seconds, steps, events]

void add_progress(Checkpoint& c, const RunTotals& totals, const ReachedTarget& reached) {
  const double t[3] = {totals.train_seconds, static_cast<double>(totals.steps),
                       static_cast<double>(totals.events)};
  c.add(kTotalsBlob, DType::f64, {3}, t, sizeof(t));
  const double r[4] = {static_cast<double>(reached.epoch), reached.at.train_seconds,
                       static_cast<double>(reached.at.steps),
                       static_cast<double>(reached.at.events)};
  c.add(kReachedBlob, DType::f64, {4}, r, sizeof(r));
}

RunTotals totals_from(const double* v) {
  return RunTotals{v[0], static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2])};
}

// A checkpoint written before the totals existed resumes from zero totals.
void read_progress(const Checkpoint& c, RunTotals& totals, ReachedTarget& reached) {
  if (c.find(kTotalsBlob) == nullptr) return;
  double t[3], r[4];
  std::memcpy(t, c.get(kTotalsBlob, DType::f64, {3}).bytes.data(), sizeof(t));
  std::memcpy(r, c.get(kReachedBlob, DType::f64, {4}).bytes.data(), sizeof(r));
  totals = totals_from(t);
  reached.epoch = static_cast<int>(r[0]);
  reached.at = totals_from(r + 1);
}

json totals_json(const RunTotals& t) {
  return {{"train_seconds", t.train_seconds}, {"steps", t.steps}, {"events", t.events}};
}

json reached_json(const ReachedTarget& r) {
  if (r.epoch == 0) return nullptr;
  json j = totals_json(r.at);
  j["epoch"] = r.epoch;
  return j;
}

// --resume: the trainer continues after the last checkpointed epoch; returns the first
// epoch to run.
int resume(Trainer& trainer, const std::string& dir, BestSoFar& best) {
  Checkpoint last = read_checkpoint(in_dir(dir, "last.ckpt"));
  trainer.load(last);
  read_progress(last, best.totals, best.reached);
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

json test_json(const FitResult& r, const FitOptions& opts) {
  json row = {{"split", "test"},
              {"best_epoch", r.best_epoch},
              {"test", eval_json(r.test)},
              {"test_new_nodes", eval_json(r.test_new)},
              {"totals", totals_json(r.totals)}};
  if (opts.target_val_ap > 0) {
    row["target_val_ap"] = opts.target_val_ap;
    row["reached_target"] = reached_json(r.reached);
  }
  return row;
}

// Adds the epoch to the run's totals and notes the target's epoch; returns the epoch's
// metrics.jsonl row.
json count_epoch(const EpochResult& r, const FitOptions& opts, BestSoFar& best) {
  best.totals.train_seconds += r.train_seconds;
  best.totals.steps += r.batches;
  best.totals.events += r.events;
  json row = epoch_json(r);
  row["totals"] = totals_json(best.totals);
  const bool reaches = r.val.valid && r.val.batch_mean.ap >= opts.target_val_ap;
  if (opts.target_val_ap > 0 && best.reached.epoch == 0 && reaches) {
    best.reached = ReachedTarget{r.epoch, best.totals};
    row["reached_target"] = reached_json(best.reached);
  }
  return row;
}

// The epoch's checkpoints: last.ckpt always, best.ckpt when validation improved.
void keep_epoch(Trainer& trainer, const EpochResult& r, const FitOptions& opts, bool files,
                BestSoFar& best) {
  const double val_ap = r.val.valid ? r.val.batch_mean.ap : -r.loss;
  Checkpoint now = trainer.save(r.epoch, opts.config_text);
  add_progress(now, best.totals, best.reached);
  if (val_ap > best.val_ap) {
    best.val_ap = val_ap, best.epoch = r.epoch, best.stale = 0;
    best.state = now;
    best.state.add("meta.val_ap", DType::f64, {1}, &best.val_ap, sizeof(double));
    if (files && opts.checkpoints) write_checkpoint(in_dir(opts.run_dir, "best.ckpt"), best.state);
  } else {
    ++best.stale;
  }
  if (files && opts.checkpoints) write_checkpoint(in_dir(opts.run_dir, "last.ckpt"), now);
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
    const json row = count_epoch(r, opts, best);
    if (files) append_json_line(in_dir(opts.run_dir, "metrics.jsonl"), row);
    keep_epoch(trainer, r, opts, files, best);
    if (opts.stop_at_target && best.reached.epoch > 0) {
      obs.on_target(best.reached);
      break;
    }
    if (opts.patience > 0 && best.stale >= opts.patience) {
      obs.on_early_stop(epoch, best.stale);
      break;
    }
  }
  if (best.epoch > 0) trainer.load(best.state);
  std::tie(result.test, result.test_new) = trainer.test();
  result.best_epoch = best.epoch;
  result.best_val_ap = best.val_ap;
  result.totals = best.totals;
  result.reached = best.reached;
  obs.on_test(result);
  if (files) append_json_line(in_dir(opts.run_dir, "metrics.jsonl"), test_json(result, opts));
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
