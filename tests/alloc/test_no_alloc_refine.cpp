// Intra-batch refinement's pieces allocate nothing once warm (test_no_alloc.cpp replaces the
// allocation functions with counting ones): RefinePlanner::plan on a step of the tiny stream
// cut into 4 micro-batches, and MemoryRefiner's forward and backward from a warm arena.
#include <gtest/gtest.h>

#include <vector>

#include "alloc/alloc_counting.h"
#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
#include "depbloom/model/memory_refiner.h"
#include "depbloom/train/refine_plan.h"
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

  const int64_t rows = 48, d_mem = 16, d_msg = 40, d_time = 8;
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
    Tensor m = arena.alloc(DType::f32, Shape(rows, d_msg));
    Tensor dt = arena.alloc(DType::f32, Shape(rows));
    ops::fill(s, 0.5), ops::fill(m, -0.25), ops::fill(dt, 2.0);
    Tensor out = arena.alloc(DType::f32, Shape(rows, d_mem));
    Tensor d_s = arena.alloc(DType::f32, Shape(rows, d_mem));
    Tensor d_m = arena.alloc(DType::f32, Shape(rows, d_msg));
    model::MemoryRefinerContext ctx;
    refiner.forward(out, ctx, s, m, dt, arena);
    refiner.backward(d_s, d_m, out, ctx, arena);
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

}  // namespace
