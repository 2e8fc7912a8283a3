// The Strategy seam: strict's contiguous parts of a global step for 1 to 4 ranks (even and
// uneven sizes, parts left empty) cover the step in event order with the right loss shares;
// with one rank (no communicator or a local one) every strategy is the single-device
// schedule and step, bit for bit, and makes no collective; the strategy table serves the
// names; an unknown strategy name is a config error naming strategy.name, from the factory
// and from the Trainer. (Several ranks under mpirun: tests/mpi/test_strict_training.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/train/strategy.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace depbloom::train {
namespace {

TEST(Strategy, ContiguousPartsCoverTheStepInEventOrder) {
  std::vector<int64_t> batch(203);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = 1000 + 2 * static_cast<int64_t>(i);
  for (int64_t count : {1, 2, 3, 7, 200, 203}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      SCOPED_TRACE(testing::Message() << count << " events, " << ranks << " ranks");
      int64_t next = 0, smallest = count, largest = 0;
      double shares = 0;
      for (int r = 0; r < ranks; ++r) {
        const ScheduledStep s = contiguous_part(batch.data(), count, r, ranks);
        // Rank order is event order: each part starts where the previous one ended.
        EXPECT_EQ(s.events, batch.data() + next);
        EXPECT_GE(s.count, 0);
        EXPECT_EQ(s.global_count, count);
        EXPECT_EQ(s.first_event, batch[0]);
        EXPECT_DOUBLE_EQ(s.loss_share, static_cast<double>(s.count) / static_cast<double>(count));
        next += s.count;
        shares += s.loss_share;
        smallest = std::min(smallest, s.count);
        largest = std::max(largest, s.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1);  // balanced within one event
      EXPECT_NEAR(shares, 1.0, 1e-12);
    }
  }
  // The documented splits: 203 events as 101/102 on 2 ranks, 50/51/51/51 on 4; 3 events on 4
  // ranks leave rank 0 empty.
  EXPECT_EQ(contiguous_part(batch.data(), 203, 0, 2).count, 101);
  EXPECT_EQ(contiguous_part(batch.data(), 203, 1, 2).count, 102);
  EXPECT_EQ(contiguous_part(batch.data(), 203, 0, 4).count, 50);
  EXPECT_EQ(contiguous_part(batch.data(), 203, 3, 4).count, 51);
  EXPECT_EQ(contiguous_part(batch.data(), 3, 0, 4).count, 0);
  // One rank: the whole batch with a share of exactly 1 (the loss gradient stays TGL's).
  const ScheduledStep whole = contiguous_part(batch.data(), 203, 0, 1);
  EXPECT_EQ(whole.count, 203);
  EXPECT_EQ(whole.loss_share, 1.0);
}

TEST(Strategy, OneRankIsSingleDevice) {
  std::unique_ptr<dist::Communicator> local = dist::make_communicator("local", Device::cpu());
  for (dist::Communicator* comm : {static_cast<dist::Communicator*>(nullptr), local.get()}) {
    StrategyContext ctx;
    ctx.comm = comm;
    std::unique_ptr<Strategy> s = make_strategy(ctx);
    EXPECT_STREQ(s->name(), "single-device");
    EXPECT_EQ(s->ranks(), 1);
    // Steps of 2 events over 5 (the last one short), cut after 2 steps by max_steps.
    const std::vector<int64_t> train = {4, 5, 9, 12, 13};
    Schedule schedule;
    s->schedule(schedule, train, 2, 0);
    ASSERT_EQ(schedule.size(), 3);
    for (int64_t i = 0; i < 3; ++i) {
      const ScheduledStep& step = schedule.step(i);
      EXPECT_EQ(step.index, i);
      EXPECT_EQ(step.events, train.data() + 2 * i);
      EXPECT_EQ(step.count, i < 2 ? 2 : 1);
      EXPECT_EQ(step.global_count, step.count);
      EXPECT_EQ(step.loss_share, 1.0);
      EXPECT_EQ(step.sync, SyncPoint::none);
    }
    const Schedule::Range ahead = schedule.lookahead(0, 5);
    EXPECT_EQ(ahead.end - ahead.begin, 2);
    EXPECT_EQ(ahead.begin->index, 1);
    EXPECT_EQ(schedule.lookahead(2, 2).begin, schedule.lookahead(2, 2).end);
    s->schedule(schedule, train, 2, 2);
    EXPECT_EQ(schedule.size(), 2);
  }
}

TEST(Strategy, TheTableServesNamesAndSummaries) {
  EXPECT_EQ(strategy_names(), (std::vector<std::string>{"strict", "depbloom"}));
  for (const StrategyEntry& e : strategy_table()) {
    EXPECT_EQ(&strategy_entry(e.name), &e);
    EXPECT_GT(std::string(e.summary).size(), 20u) << e.name;
  }
}

TEST(Strategy, UnknownNameIsAConfigErrorNamingTheKey) {
  StrategyContext ctx;
  for (const std::string& name : strategy_names()) {
    ctx.settings.name = name;
    EXPECT_NO_THROW(make_strategy(ctx));
  }
  try {
    ctx.settings.name = "depbloom-typo";
    make_strategy(ctx);
    FAIL() << "an unknown strategy was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(e.message().find("strategy.name"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("depbloom-typo"), std::string::npos) << e.message();
  }
  const data::EventStream stream = dbtraintest::tiny_stream();
  const data::ChronoSplit split = dbtraintest::tiny_split(stream);
  TrainerConfig cfg;
  cfg.strategy.name = "bogus";
  EXPECT_THROW(Trainer(stream, split, cfg), Error);
}

// The partition.* keys are depbloom's, but a bad one is refused whichever strategy runs (as
// the cli always refused it at start), once, when the strategy is made.
TEST(Strategy, BadSettingsAreRefusedForEveryStrategy) {
  for (const std::string& name : strategy_names()) {
    StrategyContext ctx;
    ctx.settings.name = name;
    ctx.settings.partition.window_steps = 0;
    try {
      make_strategy(ctx);
      FAIL() << name << " accepted partition.window_steps 0";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::config);
      EXPECT_NE(e.message().find("partition.window_steps"), std::string::npos) << e.message();
    }
    ctx.settings.partition = partition::PartitionConfig{};
    ctx.settings.partition.imbalance = 0.5;
    EXPECT_THROW(check_strategy_settings(ctx.settings), Error) << name;
  }
}

TrainerConfig small_config() {
  TrainerConfig cfg;
  cfg.model.d_mem = 8;
  cfg.model.d_mem_time = 4;
  cfg.model.d_emb = 8;
  cfg.model.d_gnn_time = 4;
  cfg.model.neighbours = 4;
  cfg.model.dropout = 0.1;  // the slice keeps the batch's dropout rows
  cfg.batch_size = 16;
  cfg.eval_batch_size = 16;
  cfg.lr = 1e-2;
  return cfg;
}

// The P = 1 rule through the Trainer: a one-rank communicator trains exactly as no
// communicator does, and exchanges nothing.
TEST(Strategy, OneRankCommunicatorTrainsBitForBitAsOneDevice) {
  const data::EventStream stream = dbtraintest::tiny_stream(23, 240, 24, 3);
  const data::ChronoSplit split = dbtraintest::tiny_split(stream, 160, 200);
  std::unique_ptr<dist::Communicator> local = dist::make_communicator("local", Device::cpu());
  TrainerConfig cfg = small_config();
  Trainer alone(stream, split, cfg);
  cfg.comm = local.get();
  Trainer one_rank(stream, split, cfg);
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const EpochResult a = alone.run_epoch(epoch);
    const EpochResult b = one_rank.run_epoch(epoch);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.val.whole.ap, b.val.whole.ap);
    EXPECT_EQ(b.ranks, 1);
    EXPECT_EQ(b.strategy, "single-device");
    EXPECT_EQ(b.comm.total_calls(), 0);
    EXPECT_EQ(b.counts.local_events, b.events);
    EXPECT_EQ(b.counts.exchanged_rows + b.counts.exchanged_mails, 0);
  }
  EXPECT_EQ(alone.loss_trace(), one_rank.loss_trace());
}

}  // namespace
}  // namespace depbloom::train
