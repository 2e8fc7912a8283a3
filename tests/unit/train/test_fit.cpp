// train::fit's time-to-accuracy accounting and the learning-rate schedule: the scaling rules
// and the warm-up against hand-computed rates; a trainer under a rule trains exactly as one
// given the scaled rate; the run's totals add up over epochs; train.target_val_ap reached
// and not reached; stopping at the target; and --resume keeping the totals, the target's
// epoch and the warm-up position (the resumed run equals the straight one bit for bit).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "depbloom/train/fit.h"
#include "depbloom/train/lr_schedule.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace dbtraintest {
namespace {

namespace fs = std::filesystem;
using depbloom::DType;
using depbloom::train::FitOptions;
using depbloom::train::FitResult;
using depbloom::train::LrScaling;
using depbloom::train::LrSchedule;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

struct LrCase {
  LrScaling scaling;
  int64_t batch, reference, warmup, step;
  double expected;  // the rate for lr = 1e-3, by hand
};

TEST(LrSchedule, RulesAndWarmupGiveTheHandComputedRates) {
  const LrCase cases[] = {
      {LrScaling::none, 2400, 600, 0, 0, 1e-3},
      {LrScaling::sqrt, 2400, 600, 0, 0, 2e-3},  // sqrt(4) = 2
      {LrScaling::linear, 2400, 600, 0, 0, 4e-3},
      {LrScaling::linear, 300, 600, 0, 7, 0.5e-3},  // below the reference: scaled down
      {LrScaling::sqrt, 4800, 600, 0, 0, 1e-3 * 2.8284271247461903},
      {LrScaling::none, 2400, 600, 10, 0, 1e-4},  // (0 + 1) / 10
      {LrScaling::linear, 2400, 600, 10, 4, 4e-3 * 0.5},
      {LrScaling::linear, 2400, 600, 10, 9, 4e-3},  // the last warm-up step: full rate
      {LrScaling::sqrt, 2400, 600, 10, 1000, 2e-3},
      {LrScaling::linear, 2400, 1200, 4, 0, 2e-3 * 0.25},
  };
  for (const LrCase& c : cases) {
    const LrSchedule s{c.scaling, c.reference, c.warmup};
    EXPECT_NEAR(depbloom::train::scheduled_lr(1e-3, c.batch, s, c.step), c.expected, 1e-15)
        << "scaling " << static_cast<int>(c.scaling) << " batch " << c.batch << " warm-up "
        << c.warmup << " step " << c.step;
  }
}

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_ = tiny_stream(29, 240, 24, 3);
    split_ = tiny_split(stream_, 160, 200);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("depbloom_fit_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainerConfig config() const {
    TrainerConfig cfg;
    cfg.model.d_mem = 8;
    cfg.model.d_mem_time = 4;
    cfg.model.d_emb = 8;
    cfg.model.d_gnn_time = 4;
    cfg.model.heads = 2;
    cfg.model.neighbours = 4;
    cfg.batch_size = 16;
    cfg.eval_batch_size = 16;
    cfg.lr = 1e-2;
    cfg.dtype = DType::f32;
    return cfg;
  }

  FitResult run(const TrainerConfig& cfg, FitOptions opts) const {
    Trainer trainer(stream_, split_, cfg);
    return depbloom::train::fit(trainer, opts);
  }

  std::string folder(const char* name) const {
    fs::create_directories(dir_ / name);
    return (dir_ / name).string();
  }

  depbloom::data::EventStream stream_;
  depbloom::data::ChronoSplit split_;
  fs::path dir_;
};

std::vector<float> parameters_after_one_step(const depbloom::data::EventStream& stream,
                                             const depbloom::data::ChronoSplit& split,
                                             const TrainerConfig& cfg) {
  Trainer trainer(stream, split, cfg);
  trainer.train_step(trainer.schedule_epoch().step(0), 1);
  const depbloom::Tensor v = trainer.parameters().values();
  return std::vector<float>(v.data<float>(), v.data<float>() + v.numel());
}

// The rule at batch 4 x reference is lr x 4 (linear) or x 2 (sqrt), and the first warm-up
// step of 2 trains at half the rate: the same parameters as a trainer given that rate.
TEST_F(FitTest, TheRunnerTrainsAtTheScheduledRate) {
  TrainerConfig plain = config();
  TrainerConfig ruled = config();
  ruled.lr_schedule = LrSchedule{LrScaling::linear, 4, 0};
  plain.lr = 4e-2;
  EXPECT_EQ(parameters_after_one_step(stream_, split_, ruled),
            parameters_after_one_step(stream_, split_, plain));
  ruled.lr_schedule = LrSchedule{LrScaling::sqrt, 4, 2};  // x 2, then x 1/2 at step 0
  plain.lr = 1e-2;
  EXPECT_EQ(parameters_after_one_step(stream_, split_, ruled),
            parameters_after_one_step(stream_, split_, plain));
  plain.lr = 2e-2;  // and it does differ from the unwarmed rate
  EXPECT_NE(parameters_after_one_step(stream_, split_, ruled),
            parameters_after_one_step(stream_, split_, plain));
}

TEST_F(FitTest, TotalsAddUpAndTheTargetIsTheFirstEpochReachingIt) {
  FitOptions opts;
  opts.epochs = 3;
  const FitResult plain = run(config(), opts);
  ASSERT_EQ(plain.epochs.size(), 3u);
  std::vector<double> ap;
  int64_t steps = 0, events = 0;
  double seconds = 0;
  for (const auto& e : plain.epochs) {
    ap.push_back(e.val.batch_mean.ap);
    steps += e.batches, events += e.events, seconds += e.train_seconds;
  }
  EXPECT_EQ(plain.totals.steps, steps);
  EXPECT_EQ(plain.totals.steps, 3 * 10);  // 160 training events at batch 16
  EXPECT_EQ(plain.totals.events, events);
  EXPECT_EQ(plain.totals.events, 3 * 160);
  EXPECT_DOUBLE_EQ(plain.totals.train_seconds, seconds);
  EXPECT_EQ(plain.reached.epoch, 0);  // no target set

  // The best epoch's AP is reached, first where the APs first get there.
  const double best = *std::max_element(ap.begin(), ap.end());
  const auto first = std::find_if(ap.begin(), ap.end(), [&](double a) { return a >= best; });
  opts.target_val_ap = best;
  const FitResult reached = run(config(), opts);
  EXPECT_EQ(reached.reached.epoch, 1 + (first - ap.begin()));
  EXPECT_EQ(reached.reached.at.steps, 10 * reached.reached.epoch);
  EXPECT_EQ(reached.reached.at.events, 160 * reached.reached.epoch);
  EXPECT_EQ(reached.epochs.size(), 3u);  // recorded, not stopped
  ASSERT_LT(best, 1.0);
  opts.target_val_ap = std::min(1.0, best + 1e-6);
  EXPECT_EQ(run(config(), opts).reached.epoch, 0);
}

TEST_F(FitTest, StopAtTargetStopsAfterTheEpochReachingIt) {
  FitOptions opts;
  opts.epochs = 3;
  opts.target_val_ap = 1e-9;  // any AP reaches it: epoch 1
  opts.stop_at_target = true;
  const FitResult r = run(config(), opts);
  EXPECT_EQ(r.reached.epoch, 1);
  EXPECT_EQ(r.epochs.size(), 1u);
  EXPECT_EQ(r.totals.steps, 10);
  EXPECT_TRUE(r.test.valid);  // the test still runs, on the best epoch's state
}

// A run cut after epoch 1 and resumed to 3 trains as the straight run, the warm-up (longer
// than the run) continuing where it was; its totals and target count on from the checkpoint.
TEST_F(FitTest, ResumeKeepsTheTotalsTheTargetAndTheWarmup) {
  TrainerConfig cfg = config();
  cfg.lr_schedule.warmup_steps = 50;
  FitOptions opts;
  opts.epochs = 3;
  opts.target_val_ap = 1e-9;
  opts.run_dir = folder("straight");
  const FitResult straight = run(cfg, opts);
  opts.epochs = 1;
  opts.run_dir = folder("cut");
  const FitResult cut = run(cfg, opts);
  opts.epochs = 3;
  opts.resume_dir = opts.run_dir;
  const FitResult resumed = run(cfg, opts);
  ASSERT_EQ(resumed.epochs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(resumed.epochs[i].loss, straight.epochs[i + 1].loss) << "epoch " << i + 2;
    EXPECT_EQ(resumed.epochs[i].val.batch_mean.ap, straight.epochs[i + 1].val.batch_mean.ap);
  }
  EXPECT_EQ(resumed.totals.steps, straight.totals.steps);
  EXPECT_EQ(resumed.totals.events, straight.totals.events);
  EXPECT_GT(resumed.totals.train_seconds, cut.totals.train_seconds);
  EXPECT_EQ(resumed.reached.epoch, 1);  // reached before the cut, kept
  EXPECT_EQ(resumed.reached.at.steps, 10);
  EXPECT_EQ(resumed.reached.at.train_seconds, cut.reached.at.train_seconds);
  EXPECT_EQ(resumed.test.batch_mean.ap, straight.test.batch_mean.ap);
}

}  // namespace
}  // namespace dbtraintest
