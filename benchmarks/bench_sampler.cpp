// Temporal sampler throughput over the whole WIKI stream, TGL's protocol: batches of 600
// events in order, roots = src, dst and one random negative per event, queried at the
// event time, on a CSR of the full stream. Reports roots per second and the pass time.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/data/loader.h"
#include "depbloom/graph/negative_sampler.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "depbloom/model/node_state.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/step_io.h"

namespace {

using depbloom::data::EventStream;
using namespace depbloom::graph;

constexpr int64_t kBatchEvents = 600;
constexpr int kRolesPerEvent = 3;  // src, dst, negative

// The stream, its CSR and the roots of every batch, built once for all benchmarks.
struct WikiPass {
  EventStream stream;
  TemporalCsr csr;
  std::vector<int32_t> nodes;  // batch b holds [src x B, dst x B, neg x B] at 3 * b * 600
  std::vector<double> times;
  std::vector<uint64_t> keys;  // event * 3 + role

  int64_t num_events() const { return stream.num_events(); }
  RootBatch batch(int64_t first_event) const {
    const int64_t count = std::min(kBatchEvents, num_events() - first_event);
    const size_t at = static_cast<size_t>(first_event * kRolesPerEvent);
    RootBatch b;
    b.nodes = nodes.data() + at;
    b.times = times.data() + at;
    b.keys = keys.data() + at;
    b.count = count * kRolesPerEvent;
    return b;
  }
};

std::string wiki_path() {
  const char* env = std::getenv("DEPBLOOM_BENCH_WIKI");
  if (env != nullptr && env[0] != '\0') return env;
  return std::string(DEPBLOOM_SOURCE_DIR) + "/data/wikipedia/wikipedia_edges.csv";
}

const WikiPass* wiki_pass() {
  static std::unique_ptr<WikiPass> pass = [] {
    auto p = std::make_unique<WikiPass>();
    depbloom::data::LoadOptions options;
    // The shipped file is JODIE's CSV without the feature columns: u,i,ts,label.
    options.format = "csv";
    options.columns.label = 3;
    options.columns.bipartite = true;
    options.use_cache = false;  // a benchmark must not write into data/
    p->stream = depbloom::data::load_events(wiki_path(), options);
    p->csr = TemporalCsr::build(p->stream);
    const EventStream& s = p->stream;
    const TrainNegativeSampler negatives(s, 1);
    const size_t total = static_cast<size_t>(s.num_events() * kRolesPerEvent);
    p->nodes.resize(total);
    p->times.resize(total);
    p->keys.resize(total);
    for (int64_t first = 0; first < s.num_events(); first += kBatchEvents) {
      const int64_t count = std::min(kBatchEvents, s.num_events() - first);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t e = first + i;
        const int32_t role_node[kRolesPerEvent] = {
            s.src[static_cast<size_t>(e)], s.dst[static_cast<size_t>(e)], negatives.draw(e, 0, 0)};
        for (int role = 0; role < kRolesPerEvent; ++role) {
          const size_t at = static_cast<size_t>(first * kRolesPerEvent + role * count + i);
          p->nodes[at] = role_node[role];
          p->times[at] = s.ts[static_cast<size_t>(e)];
          p->keys[at] = static_cast<uint64_t>(e * kRolesPerEvent + role);
        }
      }
    }
    return p;
  }();
  return pass.get();
}

// One pass over all batches per iteration; range(0) = OpenMP threads.
void run_pass(benchmark::State& state, const NeighbourSampler& sampler, const WikiPass& pass) {
  omp_set_num_threads(static_cast<int>(state.range(0)));
  BlockBuffers out(kBatchEvents * kRolesPerEvent, sampler.k(), sampler.hops());
  for (auto _ : state) {
    for (int64_t first = 0; first < pass.num_events(); first += kBatchEvents) {
      sampler.sample(pass.batch(first), 0, out);
      benchmark::DoNotOptimize(out.hop(sampler.hops() - 1).mask);
    }
    benchmark::ClobberMemory();
  }
  const double roots = static_cast<double>(pass.num_events() * kRolesPerEvent);
  state.counters["roots/s"] =
      benchmark::Counter(roots, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["roots"] = roots;
  state.SetLabel(std::to_string(pass.num_events()) + " events, " +
                 std::to_string(pass.stream.num_nodes) + " nodes" +
                 (pass.stream.bipartite ? " (bipartite)" : ""));
}

void BM_RecentPass(benchmark::State& state) {
  const WikiPass& pass = *wiki_pass();
  RecentSampler sampler(pass.csr, 10, static_cast<int32_t>(state.range(1)));
  run_pass(state, sampler, pass);
}

void BM_UniformPass(benchmark::State& state) {
  const WikiPass& pass = *wiki_pass();
  UniformSampler sampler(pass.csr, 10, static_cast<int32_t>(state.range(1)), 7);
  run_pass(state, sampler, pass);
}

void BM_CsrBuild(benchmark::State& state) {
  const WikiPass& pass = *wiki_pass();
  omp_set_num_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    TemporalCsr csr = TemporalCsr::build(pass.stream);
    benchmark::DoNotOptimize(csr.neighbours());
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(pass.num_events()),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// Evaluation negatives for the last 15% of the stream (the usual test split), 100 per
// positive as for MRR; range(0) = strategy (0 random, 1 historical, 2 inductive).
void BM_EvalNegatives(benchmark::State& state) {
  const WikiPass& pass = *wiki_pass();
  omp_set_num_threads(1);
  const int64_t begin = pass.num_events() * 85 / 100;
  const auto strategy = static_cast<EvalNegativeStrategy>(state.range(0));
  const EvalNegativeSampler sampler(pass.stream, begin, strategy, 100, 7);
  std::vector<int32_t> out(static_cast<size_t>((pass.num_events() - begin) * 100));
  for (auto _ : state) {
    sampler.sample(2, begin, pass.num_events() - begin, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(eval_negative_strategy_name(strategy));
  state.counters["positives/s"] = benchmark::Counter(static_cast<double>(pass.num_events() - begin),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

// The training step's sample stage on the host, as Trainer::sample runs it: the negatives,
// BatchPlanner's plan (TGN: 10 most recent neighbours on one hop) and BatchStager's inputs
// from a NodeState of TGN's widths, over every batch of 600 events; range(0) = OpenMP
// threads, 0 = all cores (a GPU run plans inline with the whole team; a pipelined CPU run
// plans ahead on the side thread with one). Reports roots and slots per second (the cost
// model's host_plan_per_s at 1 thread; host_threads scales it).
void BM_PlanPass(benchmark::State& state) {
  const WikiPass& pass = *wiki_pass();
  const int threads = state.range(0) > 0 ? static_cast<int>(state.range(0)) : omp_get_num_procs();
  omp_set_num_threads(threads);
  RecentSampler sampler(pass.csr, 10, 1);
  depbloom::train::PlanConfig cfg;
  cfg.hops = 1;
  cfg.neighbours = 10;
  cfg.skip_empty_mailbox = true;
  depbloom::train::BatchPlanner planner(pass.stream, cfg);
  depbloom::train::BatchStager stager(cfg, depbloom::DType::f32);
  depbloom::train::StepArena arena(depbloom::Device::cpu());
  const depbloom::model::NodeState node_state(pass.stream.num_nodes, 100, 372, 1,
                                              depbloom::DType::f32, depbloom::Device::cpu());
  depbloom::train::BatchPlan plan;
  const TrainNegativeSampler negatives(pass.stream, 1);
  std::vector<int64_t> events(static_cast<size_t>(pass.num_events()));
  for (int64_t e = 0; e < pass.num_events(); ++e) events[static_cast<size_t>(e)] = e;
  std::vector<int32_t> drawn(static_cast<size_t>(kBatchEvents));
  double planned = 0;
  for (auto _ : state) {
    planned = 0;
    for (int64_t first = 0; first < pass.num_events(); first += kBatchEvents) {
      const int64_t count = std::min(kBatchEvents, pass.num_events() - first);
      arena.reset();
      negatives.sample_events(events.data() + first, count, 1, 0, drawn.data());
      planner.plan_batch(plan, events.data() + first, count, drawn.data(), 1, 0, &sampler);
      const depbloom::train::StagedBatch staged = stager.stage(plan, node_state, arena);
      planned += static_cast<double>(plan.roots() + plan.blocks.hop(0).num_slots());
      benchmark::DoNotOptimize(staged.in.mem_node.raw());
    }
  }
  state.counters["planned/s"] =
      benchmark::Counter(planned, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}
BENCHMARK(BM_PlanPass)
    ->Arg(1)
    ->Arg(0)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: {threads, hops}. The 1-hop recent pass is the one compared with TGL.
BENCHMARK(BM_RecentPass)
    ->ArgsProduct({{1, 2}, {1}})
    ->ArgNames({"threads", "hops"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_UniformPass)
    ->ArgsProduct({{1, 2}, {1}})
    ->ArgNames({"threads", "hops"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_RecentPass)
    ->ArgsProduct({{1, 2}, {2}})
    ->ArgNames({"threads", "hops"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EvalNegatives)
    ->DenseRange(0, 2)
    ->ArgName("strategy")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CsrBuild)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
