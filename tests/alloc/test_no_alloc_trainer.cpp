// A warm Trainer::train_step allocates nothing (test_no_alloc.cpp replaces the allocation
// functions with counting ones; this file holds the trainer cases).
#include <gtest/gtest.h>

#include <string>

#include "alloc/alloc_counting.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace {

// The whole training step (negatives, sampling, planning, staging, forward, loss,
// backward, Adam, write-back) of a trainer that has run the same batch three times
// allocates nothing on its fourth run, and its arena does not grow.
struct TrainerCase {
  const char* name;
  depbloom::model::MemoryKind memory;
  depbloom::model::EmbeddingKind embedding;
  int layers;
  int mailbox;
  bool deliver_to_neighbours;
  int32_t micro_batches = 1;  // > 1: a refined step (plan, copies, refine stage)
};

void PrintTo(const TrainerCase& c, std::ostream* os) {
  *os << c.name;
}

depbloom::train::TrainerConfig trainer_config(const TrainerCase& c) {
  depbloom::train::TrainerConfig cfg;
  cfg.model.memory = c.memory;
  cfg.model.embedding = c.embedding;
  cfg.model.layers = c.layers;
  cfg.model.mailbox = c.mailbox;
  cfg.model.d_mem = 16;
  cfg.model.d_mem_time = 8;
  cfg.model.d_emb = 16;
  cfg.model.d_gnn_time = 8;
  cfg.model.heads = 2;
  cfg.model.memory_heads = 2;
  cfg.model.neighbours = 5;
  cfg.model.dropout = 0.1;
  cfg.deliver_to_neighbours = c.deliver_to_neighbours;
  cfg.batch_size = 32;
  cfg.lr = 1e-3;
  cfg.seed = 1;
  cfg.refine_micro_batches = c.micro_batches;
  cfg.refine_aggregate = depbloom::train::RefineAggregate::mean;
  return cfg;
}

class WarmTrainStep : public ::testing::TestWithParam<TrainerCase> {};

TEST_P(WarmTrainStep, AllocatesNothing) {
  const auto stream = dbtraintest::tiny_stream(5, 200, 30, 4);
  depbloom::data::check_event_stream(stream);
  const auto split = dbtraintest::tiny_split(stream, 140, 170);
  const auto cfg = trainer_config(GetParam());
  depbloom::train::Trainer trainer(stream, split, cfg);
  // A batch from the middle of the training events, so the rings and neighbours are used.
  const int64_t* batch = split.train.data() + 64;
  // (Three steps also leave the loss trace with room for a fourth value: libstdc++ grows
  // its capacity 1, 2, 4; a fifth step would reallocate it.)
  const auto step = depbloom::train::contiguous_part(batch, cfg.batch_size, 0, 1);
  for (int i = 0; i < 3; ++i) trainer.train_step(step, 1);
  const int64_t arena_chunks = trainer.arena().system_allocations();
  g_allocations = 0;
  g_counting = true;
  const double loss = trainer.train_step(step, 1);
  g_counting = false;
  if (cfg.refine_micro_batches > 1) {
    EXPECT_GT(trainer.last_plan().refined_rows(), 0) << "the warm step refines nothing";
  }
  EXPECT_TRUE(loss > 0.0) << loss;
  EXPECT_EQ(g_allocations.load(), 0) << "heap allocations in a warm train_step";
  EXPECT_EQ(trainer.arena().system_allocations(), arena_chunks) << "the arena grew";
}

// Pipelined (pipeline.enabled): the warm step plans ahead, applies its urgent rows and hands
// the rest to the side thread, whose apply of the step before runs while it is counted; none
// of it allocates.
TEST(WarmPipelinedTrainStep, AllocatesNothing) {
  const auto stream = dbtraintest::tiny_stream(5, 200, 60, 4);
  const auto split = dbtraintest::tiny_split(stream, 140, 170);
  auto cfg = trainer_config({"apan", depbloom::model::MemoryKind::transformer,
                             depbloom::model::EmbeddingKind::identity, 1, 3, true});
  cfg.batch_size = 16;
  cfg.pipeline.enabled = true;
  depbloom::train::Trainer trainer(stream, split, cfg);
  // Plans move between the lookahead's slots and the two step data sets, so each buffer
  // meets the largest steps only after a few epochs.
  for (int e = 1; e <= 6; ++e) trainer.run_epoch(e);
  const depbloom::train::Schedule& steps = trainer.schedule_epoch();
  ASSERT_GE(steps.size(), 7);
  for (int64_t i = 0; i < 5; ++i) trainer.train_step(steps.step(i), 7);
  const int64_t arena_chunks = trainer.arena().system_allocations();
  const int64_t deferred = trainer.pipeline_counts().deferred_rows;
  g_allocations = 0;
  g_counting = true;
  const double loss = trainer.train_step(steps.step(5), 7);
  trainer.flush_writes();
  g_counting = false;
  EXPECT_TRUE(loss > 0.0) << loss;
  EXPECT_GT(trainer.pipeline_counts().deferred_rows, deferred) << "the side thread did nothing";
  EXPECT_EQ(g_allocations.load(), 0) << "heap allocations in a warm pipelined train_step";
  EXPECT_EQ(trainer.arena().system_allocations(), arena_chunks) << "the arena grew";
}

const TrainerCase kTrainerCases[] = {
    {"tgn_attention", depbloom::model::MemoryKind::gru, depbloom::model::EmbeddingKind::attention,
     1, 1, false},
    {"apan_mailbox_delivery", depbloom::model::MemoryKind::transformer,
     depbloom::model::EmbeddingKind::identity, 1, 3, true},
    {"tgn_attention_refine4", depbloom::model::MemoryKind::gru,
     depbloom::model::EmbeddingKind::attention, 1, 1, false, 4},
    {"apan_refine4", depbloom::model::MemoryKind::transformer,
     depbloom::model::EmbeddingKind::identity, 1, 3, true, 4},
};

INSTANTIATE_TEST_SUITE_P(Models, WarmTrainStep, ::testing::ValuesIn(kTrainerCases),
                         [](const ::testing::TestParamInfo<TrainerCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
