// Intra-batch refinement's pieces allocate nothing once warm (test_no_alloc.cpp replaces the
// allocation functions with counting ones): RefinePlanner::plan on a step of the tiny stream
// cut into 4 micro-batches, MemoryRefiner's forward and backward from a warm arena, and whole
// refined train steps with the coherence loss (TGN, APAN) and under JODIE's projection.
#include <gtest/gtest.h>

#include <vector>

#include "alloc/alloc_counting.h"
#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
#include "depbloom/model/memory_refiner.h"
#include "depbloom/train/refine_plan.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace {

using namespace depbloom;

TEST(WarmRefinement, PlanAndRefinerAllocateNothing) {
  const auto stream = dbtraintest::tiny_stream(5, 200, 30, 4);
  train::RefinePlanner planner(stream);
  std::vector<int64_t> events(64), bounds;
  for (int64_t i = 0; i < 64; ++i) events[static_cast<size_t>(i)] = 40 + i;
  // Every endpoint read by its own event's micro-batch, plus a read of node i % 30 by each.
  std::vector<int32_t> node, micro;
  train::cut_micro_batches(64, 4, bounds);
  for (int32_t j = 0; j < 4; ++j)
    for (int64_t p = bounds[static_cast<size_t>(j)]; p < bounds[static_cast<size_t>(j) + 1]; ++p) {
      const auto e = static_cast<size_t>(events[static_cast<size_t>(p)]);
      for (int32_t n : {stream.src[e], stream.dst[e], static_cast<int32_t>(p % 30)})
        node.push_back(n), micro.push_back(j);
    }
  train::RefinePlan plan;

  const int64_t rows = 48, d_mem = 16, d_msg = 40, d_time = 8, distinct_msgs = 12;
  model::ParameterStore store(DType::f32, Device::cpu());
  model::MemoryRefiner refiner(store, "refine", d_mem, d_msg, d_time, 32);
  store.finalize();
  store.initialize(3);
  Arena arena(Device::cpu());
  auto step = [&](train::RefineAggregate aggregate) {
    train::cut_micro_batches(64, 4, bounds);
    planner.plan(plan, events.data(), 64, bounds, node.data(), micro.data(),
                 static_cast<int64_t>(node.size()), aggregate);
    arena.reset();
    Tensor s = arena.alloc(DType::f32, Shape(rows, d_mem));
    Tensor distinct = arena.alloc(DType::f32, Shape(distinct_msgs, d_msg));
    Tensor dt = arena.alloc(DType::f32, Shape(rows));
    ops::fill(s, 0.5), ops::fill(distinct, -0.25), ops::fill(dt, 2.0);
    Tensor row = arena.alloc(DType::i32, Shape(rows)), msg = arena.alloc(DType::i32, Shape(rows));
    for (int32_t c = 0; c < rows; ++c) row.data<int32_t>()[c] = c, msg.data<int32_t>()[c] = c % 12;
    const model::CopyMessages msgs{distinct, row, msg, Tensor{}, rows};
    Tensor out = arena.alloc(DType::f32, Shape(rows, d_mem));
    Tensor d_s = arena.alloc(DType::f32, Shape(rows, d_mem));
    Tensor d_distinct = arena.alloc(DType::f32, Shape(distinct_msgs, d_msg));
    ops::fill(d_distinct, 0.0);
    model::MemoryRefinerContext ctx;
    refiner.forward(out, ctx, s, msgs, dt, arena);
    refiner.backward(d_s, d_distinct, out, ctx, arena);
  };
  for (int i = 0; i < 3; ++i) step(train::RefineAggregate::mean);
  ASSERT_GT(plan.rows(), 0);
  const int64_t arena_chunks = arena.system_allocations();
  g_allocations = 0;
  g_counting = true;
  step(train::RefineAggregate::mean);
  step(train::RefineAggregate::last);
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0) << "heap allocations in a warm refinement";
  EXPECT_EQ(arena.system_allocations(), arena_chunks) << "the arena grew";
}

struct CoherenceCase {
  const char* name;
  model::MemoryKind memory;
  model::EmbeddingKind embedding;
  double coherence_weight;
  bool mail_dt_at_event = false;
  model::RefineStart start = model::RefineStart::identity;
};

void PrintTo(const CoherenceCase& c, std::ostream* os) {
  *os << c.name;
}

class WarmRefinedStep : public ::testing::TestWithParam<CoherenceCase> {};

TEST_P(WarmRefinedStep, AllocatesNothing) {
  const CoherenceCase& c = GetParam();
  const auto stream = dbtraintest::tiny_stream(5, 200, 30, 4);
  const auto split = dbtraintest::tiny_split(stream, 140, 170);
  train::TrainerConfig cfg;
  cfg.model.memory = c.memory;
  cfg.model.embedding = c.embedding;
  cfg.model.mailbox = c.memory == model::MemoryKind::transformer ? 3 : 1;
  cfg.model.d_mem = 16, cfg.model.d_mem_time = 8, cfg.model.d_emb = 16, cfg.model.d_gnn_time = 8;
  cfg.model.neighbours = 5;
  cfg.model.coherence_weight = c.coherence_weight;
  cfg.model.mail_dt_at_event = c.mail_dt_at_event;
  cfg.model.refine_start = c.start;
  cfg.deliver_to_neighbours = c.memory == model::MemoryKind::transformer;
  cfg.batch_size = 32;
  cfg.lr = 1e-3;
  cfg.seed = 1;
  cfg.refine_micro_batches = 4;
  cfg.refine_coherence_sample = 0.5;
  train::Trainer trainer(stream, split, cfg);
  const auto step = train::contiguous_part(split.train.data() + 64, cfg.batch_size, 0, 1);
  // Three warm steps (the loss trace then has room for a fourth value).
  for (int i = 0; i < 3; ++i) trainer.train_step(step, 1);
  const int64_t arena_chunks = trainer.arena().system_allocations();
  g_allocations = 0;
  g_counting = true;
  const double loss = trainer.train_step(step, 1);
  g_counting = false;
  EXPECT_GT(trainer.last_plan().refined_rows(), 0) << "the warm step refines nothing";
  if (c.coherence_weight > 0) {
    EXPECT_FALSE(trainer.last_plan().coherence.copy.empty()) << "no coherence rows drawn";
  }
  EXPECT_TRUE(loss > 0.0) << loss;
  EXPECT_EQ(g_allocations.load(), 0) << "heap allocations in a warm refined train_step";
  EXPECT_EQ(trainer.arena().system_allocations(), arena_chunks) << "the arena grew";
}

const CoherenceCase kRefinedCases[] = {
    {"tgn_coherence", model::MemoryKind::gru, model::EmbeddingKind::attention, 0.5},
    {"apan_coherence", model::MemoryKind::transformer, model::EmbeddingKind::identity, 0.5},
    {"jodie_refine4", model::MemoryKind::rnn, model::EmbeddingKind::jodie, 0.0},
    {"tgn_start_updater_at_event", model::MemoryKind::gru, model::EmbeddingKind::attention, 0.0,
     true, model::RefineStart::updater},
    {"apan_start_updater", model::MemoryKind::transformer, model::EmbeddingKind::identity, 0.0,
     false, model::RefineStart::updater},
};

INSTANTIATE_TEST_SUITE_P(Models, WarmRefinedStep, ::testing::ValuesIn(kRefinedCases),
                         [](const ::testing::TestParamInfo<CoherenceCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
