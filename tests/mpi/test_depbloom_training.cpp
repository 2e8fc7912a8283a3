// The depbloom strategy under mpirun (issue 16). Each rank runs, besides its share of the
// P-rank run, a one-process reference of it: one single-device trainer and P copies of the
// node state; each step runs every part's events on its copy (Trainer::step_loss), applies
// its writes there, combines the P gradients by event share and takes the Adam step; at a
// window end the copies are merged by the rules, written out here as plain loops over the
// f64 tensors (newest update time wins memory, ties to the lower rank; each node's ring is
// its window-start ring plus the mails the ranks' rings still hold, merged by time with the
// lower rank the newer on ties, the newest kept). In f64 over three windows, for TGN and for
// APAN (mailbox 4, mails to neighbours, so rings wrap inside a window), every step's loss
// and this rank's replica match the reference within 1e-10; after each window end the
// replicas' checksums are equal on all ranks, and inside windows they differ. With one rank
// (np 1) the run over the mpi communicator is single-device training bit for bit, and on a
// GPU two CUDA ranks sharing GPU 0 follow the CPU ranks (depbloom_training_cuda_np2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/partition/window_plan.h"
#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

constexpr double kTolerance = 1e-10;
constexpr int64_t kWindows = 3;

const dbtest::WikiStream& wiki() {
  static const dbtest::WikiStream w = dbtest::load_wiki(6000);
  return w;
}

dist::Communicator& world() {
  static std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi", Device::cpu());
  return *comm;
}

partition::PartitionMethod best_method() {
  return partition::metis_available() ? partition::PartitionMethod::metis
                                      : partition::PartitionMethod::fennel;
}

TrainerConfig tgn() {
  TrainerConfig c;
  c.dtype = DType::f64;
  c.batch_size = 200;
  c.model.dropout = 0.1;
  c.strategy.name = "depbloom";
  c.strategy.partition.window_steps = 2;
  c.strategy.partition.method = best_method();
  return c;
}

TrainerConfig apan() {
  TrainerConfig c = tgn();
  c.model.memory = model::MemoryKind::transformer;
  c.model.embedding = model::EmbeddingKind::identity;
  c.model.mailbox = 4;
  c.model.memory_heads = 2;
  c.deliver_to_neighbours = true;
  return c;
}

double* f64(const Tensor& t) {
  return t.data<double>();
}

// Order-sensitive sum of a replica's tensors and rings.
double checksum(const model::NodeState& s) {
  double sum = 0, w = 1;
  for (const Tensor* t : {&s.memory(), &s.last_update(), &s.mail(), &s.mail_ts()})
    for (int64_t i = 0; i < t->numel(); ++i, w = w * 1.0000001 + 1e-3) sum += w * f64(*t)[i];
  for (int64_t v = 0; v < s.num_nodes(); ++v)
    sum += (v % 7 + 1) * (s.ring_head(v) * 11.0 + s.mail_count(v));
  return sum;
}

double max_diff(const model::NodeState& a, const model::NodeState& b) {
  double worst = 0;
  const Tensor* ta[] = {&a.memory(), &a.last_update(), &a.mail(), &a.mail_ts()};
  const Tensor* tb[] = {&b.memory(), &b.last_update(), &b.mail(), &b.mail_ts()};
  for (int k = 0; k < 4; ++k)
    for (int64_t i = 0; i < ta[k]->numel(); ++i)
      worst = std::max(worst, std::abs(f64(*ta[k])[i] - f64(*tb[k])[i]));
  EXPECT_EQ(a.ring_heads(), b.ring_heads());
  EXPECT_EQ(a.ring_counts(), b.ring_counts());
  return worst;
}

// P ranks' window sub-chains run in one process, merged by the rules at window ends.
class Reference {
 public:
  Reference(const TrainerConfig& cfg, const partition::WindowPlan& plan)
      : plan_(plan), trainer_(wiki().stream, wiki().split, single(cfg)), cfg_(cfg) {
    const model::NodeState& s = trainer_.state();
    for (int p = 0; p < plan.ranks; ++p) {
      copies_.push_back(std::make_unique<model::NodeState>(
          s.num_nodes(), s.memory_dim(), s.mail_dim(), s.mail_slots(), DType::f64));
      wrote_.emplace_back(static_cast<size_t>(s.num_nodes()), 0);
      claims_.emplace_back(static_cast<size_t>(s.num_nodes()), 0);
    }
    start_ = std::make_unique<model::NodeState>(s.num_nodes(), s.memory_dim(), s.mail_dim(),
                                                s.mail_slots(), DType::f64);
  }

  const model::NodeState& copy(int p) const { return *copies_[static_cast<size_t>(p)]; }

  // Step s of window w on every part; returns the global loss.
  double step(const partition::PlanWindow& w, int64_t s) {
    model::ParameterStore& store = trainer_.parameters();
    std::vector<double> grad(static_cast<size_t>(store.numel()), 0.0);
    int64_t global = 0;
    for (const auto& part : w.parts) global += part.step_offsets[s + 1] - part.step_offsets[s];
    double loss = 0;
    for (int p = 0; p < plan_.ranks; ++p) {
      const partition::WindowPart& part = w.parts[static_cast<size_t>(p)];
      const int64_t lo = part.step_offsets[s], n = part.step_offsets[s + 1] - lo;
      if (n == 0) continue;
      model::NodeState& mine = *copies_[static_cast<size_t>(p)];
      trainer_.state().copy_from(mine);
      const double share = static_cast<double>(n) / static_cast<double>(global);
      loss += share * trainer_.step_loss(part.events.data() + lo, n, 1, true);
      for (int64_t i = 0; i < store.numel(); ++i)
        grad[static_cast<size_t>(i)] += share * f64(store.grads())[i];
      const model::WriteSet& writes = trainer_.step_writes();
      for (int64_t i = 0; i < writes.mem_count; ++i) wrote_[p][writes.mem_node[i]] = 1;
      for (int64_t i = 0; i < writes.mail_count; ++i) ++claims_[p][writes.mail_node[i]];
      mine.apply(writes, model::WriteFilter{}, arena_);
      arena_.reset();
    }
    std::copy(grad.begin(), grad.end(), f64(store.grads()));
    ops::AdamConfig adam;
    adam.lr = cfg_.lr;
    adam.weight_decay = cfg_.weight_decay;
    store.adam_step(adam);
    return loss;
  }

  // The window end: every copy becomes the merge of all of them.
  void merge() {
    model::NodeState merged(start_->num_nodes(), start_->memory_dim(), start_->mail_dim(),
                            start_->mail_slots(), DType::f64);
    merged.copy_from(*start_);
    const int64_t d_mem = merged.memory_dim(), d_mail = merged.mail_dim();
    const int slots = merged.mail_slots();
    for (int64_t v = 0; v < merged.num_nodes(); ++v) {
      int best = -1;
      for (int p = 0; p < plan_.ranks; ++p)
        if (wrote_[p][v] != 0 &&
            (best < 0 || f64(copy(p).last_update())[v] > f64(copy(best).last_update())[v]))
          best = p;
      if (best >= 0) {
        std::memcpy(f64(merged.memory()) + v * d_mem, f64(copy(best).memory()) + v * d_mem,
                    sizeof(double) * d_mem);
        f64(merged.last_update())[v] = f64(copy(best).last_update())[v];
      }
      // Each rank's held window mails of v, oldest first: (time, rank, flat slot).
      struct Mail {
        double time;
        int rank;
        int64_t flat;
      };
      std::vector<std::vector<Mail>> runs(static_cast<size_t>(plan_.ranks));
      int64_t claims = 0, held = 0;
      for (int p = 0; p < plan_.ranks; ++p) {
        const int k = claims_[p][v], n = std::min(k, slots);
        claims += k, held += n;
        for (int j = 0; j < n; ++j) {
          const int64_t flat = v * slots + (copy(p).ring_head(v) - n + j + 2 * slots) % slots;
          runs[p].push_back({f64(copy(p).mail_ts())[flat], p, flat});
        }
      }
      if (claims == 0) continue;
      int head = merged.ring_head(v), count = merged.mail_count(v);
      const int64_t skip = claims - held;
      head = static_cast<int>((head + skip) % slots);
      count = static_cast<int>(std::min<int64_t>(count + skip, slots));
      std::vector<size_t> next(runs.size(), 0);
      for (int64_t taken = 0; taken < held; ++taken) {
        int pick = -1;  // the oldest head; on equal times the higher rank first
        for (int p = 0; p < plan_.ranks; ++p) {
          if (next[p] == runs[p].size()) continue;
          if (pick < 0 || runs[p][next[p]].time <= runs[pick][next[pick]].time) pick = p;
        }
        const Mail& m = runs[pick][next[pick]++];
        const int64_t to = v * slots + head;
        std::memcpy(f64(merged.mail()) + to * d_mail, f64(copy(m.rank).mail()) + m.flat * d_mail,
                    sizeof(double) * d_mail);
        f64(merged.mail_ts())[to] = m.time;
        head = (head + 1) % slots;
        count = std::min(count + 1, slots);
      }
      merged.set_ring(v, head, count);
    }
    for (auto& c : copies_) c->copy_from(merged);
    start_->copy_from(merged);
    for (auto& w : wrote_) std::fill(w.begin(), w.end(), 0);
    for (auto& c : claims_) std::fill(c.begin(), c.end(), 0);
  }

 private:
  static TrainerConfig single(TrainerConfig c) {
    c.comm = nullptr;
    return c;
  }

  const partition::WindowPlan& plan_;
  Trainer trainer_;
  TrainerConfig cfg_;
  Arena arena_{Device::cpu()};
  std::vector<std::unique_ptr<model::NodeState>> copies_;
  std::unique_ptr<model::NodeState> start_;
  std::vector<std::vector<uint8_t>> wrote_;
  std::vector<std::vector<int32_t>> claims_;
};

void expect_matches_reference(const char* what, TrainerConfig cfg) {
  dist::Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs 2 or more ranks";
  SCOPED_TRACE(what);
  const partition::WindowPlan plan =
      partition::make_window_plan(wiki().stream, wiki().split.train, comm.size(), cfg.batch_size,
                                  cfg.strategy.partition, cfg.seed);
  ASSERT_GE(static_cast<int64_t>(plan.windows.size()), kWindows);
  int64_t steps = 0;
  for (int64_t w = 0; w < kWindows; ++w) steps += plan.windows[static_cast<size_t>(w)].steps;
  cfg.max_batches = steps;
  cfg.comm = &comm;
  Reference ref(cfg, plan);
  Trainer trainer(wiki().stream, wiki().split, cfg);
  ASSERT_STREQ(trainer.strategy().name(), "depbloom");
  const Schedule& schedule = trainer.schedule_epoch();
  ASSERT_EQ(schedule.size(), steps);
  std::vector<double> sums(static_cast<size_t>(comm.size()));
  int64_t i = 0, differing_inside = 0;
  for (int64_t w = 0; w < kWindows; ++w) {
    const partition::PlanWindow& window = plan.windows[static_cast<size_t>(w)];
    for (int64_t s = 0; s < window.steps; ++s, ++i) {
      SCOPED_TRACE(testing::Message() << "window " << w << " step " << s);
      const ScheduledStep& step = schedule.step(i);
      EXPECT_EQ(step.sync == SyncPoint::exchange, s + 1 == window.steps);
      const double loss = trainer.train_step(step, 1);
      const double expected = ref.step(window, s);
      EXPECT_NEAR(loss, expected, kTolerance * std::max(1.0, std::abs(expected)));
      if (step.sync == SyncPoint::exchange) ref.merge();
      EXPECT_LE(max_diff(trainer.state(), ref.copy(comm.rank())), kTolerance);
      double mine = checksum(trainer.state());
      comm.all_gather(Tensor::wrap(&mine, Shape(1)), Tensor::wrap(sums.data(), Shape(comm.size())));
      const bool equal =
          std::all_of(sums.begin(), sums.end(), [&](double x) { return x == sums[0]; });
      if (step.sync == SyncPoint::exchange)
        EXPECT_TRUE(equal) << "replicas differ after a window end";
      else
        differing_inside += equal ? 0 : 1;
    }
  }
  EXPECT_GT(differing_inside, 0) << "the replicas never differed inside a window";
  // The exchanged rows are what the ranks wrote: at least one per event endpoint's node.
  const StrategyCounts& counts = trainer.strategy().counts();
  EXPECT_EQ(counts.exchanges, kWindows);
  EXPECT_GT(counts.exchanged_rows, 0);
  EXPECT_GT(counts.exchanged_mails, 0);
}

TEST(DepbloomTraining, TgnMatchesTheOneProcessReference) {
  expect_matches_reference("tgn", tgn());
}

TEST(DepbloomTraining, ApanMatchesTheOneProcessReference) {
  expect_matches_reference("apan", apan());
}

// depbloom-train --plan's forecast (Trainer::forecast_epoch: one process, every rank's
// strategy over a CountingCommunicator) equals what a P-rank MPI epoch then counts, so the
// counting communicator counts what the MPI one does: every collective kind's calls and
// bytes, the exchanges, rows, mails and bytes, rank 0's events and the window statistics;
// for strict and depbloom, TGN and APAN, with run.max_batches cutting the last window short.
TEST(DepbloomTraining, PlanForecastEqualsWhatARunCounts) {
  dist::Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs 2 or more ranks";
  for (const char* strategy : {"strict", "depbloom"})
    for (TrainerConfig cfg : {tgn(), apan()}) {
      SCOPED_TRACE(testing::Message() << strategy << ", mailbox " << cfg.model.mailbox);
      cfg.strategy.name = strategy;
      cfg.max_batches = 5;
      cfg.new_nodes = false;
      Trainer alone(wiki().stream, wiki().split, cfg);
      const EpochForecast f = alone.forecast_epoch(comm.size());
      cfg.comm = &comm;
      Trainer ranked(wiki().stream, wiki().split, cfg);
      const EpochResult r = ranked.run_epoch(1);
      EXPECT_EQ(f.steps, r.batches);
      EXPECT_EQ(f.events, r.events);
      for (int k = 0; k < dist::kNumCollectiveKinds; ++k) {
        const auto kind = static_cast<dist::CollectiveKind>(k);
        EXPECT_EQ(f.comm[kind].calls, r.comm[kind].calls) << dist::collective_name(kind);
        EXPECT_EQ(f.comm[kind].bytes, r.comm[kind].bytes) << dist::collective_name(kind);
      }
      const StrategyCounts &a = f.counts, &b = r.counts;
      if (comm.rank() == 0) {
        EXPECT_EQ(a.local_events, b.local_events);
      }
      EXPECT_EQ(a.exchanges, b.exchanges);
      EXPECT_EQ(a.exchanged_rows, b.exchanged_rows);
      EXPECT_EQ(a.exchanged_mails, b.exchanged_mails);
      EXPECT_EQ(a.exchange_bytes, b.exchange_bytes);
      EXPECT_EQ(a.windows, b.windows);
      EXPECT_EQ(a.cut_events, b.cut_events);
      EXPECT_EQ(a.migrated_nodes, b.migrated_nodes);
      EXPECT_EQ(a.max_imbalance, b.max_imbalance);
      EXPECT_GT(b.exchanged_rows, 0);
    }
}

// One rank over the mpi communicator (not the local shortcut) runs the depbloom strategy,
// collectives included, and equals single-device training bit for bit (f32, W = 3 batches):
// loss trace, validation AP, and node state.
void expect_one_rank_is_single_device(const char* what, TrainerConfig cfg) {
  if (world().size() != 1) GTEST_SKIP() << "runs with one rank";
  SCOPED_TRACE(what);
  cfg.dtype = DType::f32;
  cfg.strategy.partition.window_steps = 3;
  cfg.max_batches = 8;  // windows of 3, 3 and 2 (cut by max_batches) steps
  TrainerConfig single = cfg;
  cfg.comm = &world();
  Trainer ranked(wiki().stream, wiki().split, cfg), alone(wiki().stream, wiki().split, single);
  ASSERT_STREQ(ranked.strategy().name(), "depbloom");
  ASSERT_STREQ(alone.strategy().name(), "single-device");
  const EpochResult a = ranked.run_epoch(1), b = alone.run_epoch(1);
  EXPECT_EQ(ranked.loss_trace(), alone.loss_trace());
  EXPECT_EQ(a.val.whole.ap, b.val.whole.ap);
  EXPECT_EQ(a.counts.exchanges, 3);
  EXPECT_GT(a.comm[dist::CollectiveKind::all_gather_v].calls, 0);
  const model::NodeState &x = ranked.state(), &y = alone.state();
  const std::pair<const Tensor*, const Tensor*> tensors[] = {{&x.memory(), &y.memory()},
                                                             {&x.mail(), &y.mail()},
                                                             {&x.mail_ts(), &y.mail_ts()},
                                                             {&x.last_update(), &y.last_update()}};
  for (const auto& [p, q] : tensors)
    EXPECT_EQ(std::memcmp(p->data<float>(), q->data<float>(), p->bytes()), 0);
  EXPECT_EQ(x.ring_heads(), y.ring_heads());
  EXPECT_EQ(x.ring_counts(), y.ring_counts());
}

TEST(DepbloomOneRank, TgnOverMpiIsSingleDeviceBitForBit) {
  expect_one_rank_is_single_device("tgn", tgn());
}

TEST(DepbloomOneRank, ApanOverMpiIsSingleDeviceBitForBit) {
  expect_one_rank_is_single_device("apan", apan());
}

// Two CUDA ranks sharing GPU 0 over MPI follow two CPU ranks (f32; the GPU trainer's
// tolerances) over 8 steps. Skips without a usable GPU.
TEST(DepbloomTraining, CudaRanksOverMpiFollowCpuRanks) {
  std::string why;
  if (!backend::cuda_usable(&why)) GTEST_SKIP() << why;
  if (world().size() < 2) GTEST_SKIP() << "needs 2 or more ranks";
  static std::unique_ptr<dist::Communicator> gpu_world =
      dist::make_communicator("mpi", Device::cuda(0));
  TrainerConfig cfg = tgn();
  cfg.dtype = DType::f32;
  cfg.max_batches = 8;
  TrainerConfig on_gpu = cfg;
  cfg.comm = &world();
  on_gpu.comm = gpu_world.get();
  on_gpu.device = Device::cuda(0);
  Trainer cpu(wiki().stream, wiki().split, cfg), gpu(wiki().stream, wiki().split, on_gpu);
  const EpochResult a = cpu.run_epoch(1), b = gpu.run_epoch(1);
  ASSERT_EQ(cpu.loss_trace().size(), gpu.loss_trace().size());
  for (size_t i = 0; i < cpu.loss_trace().size(); ++i)
    EXPECT_NEAR(cpu.loss_trace()[i], gpu.loss_trace()[i], 1e-3) << "step " << i;
  EXPECT_NEAR(a.val.whole.ap, b.val.whole.ap, 1e-2);
  EXPECT_EQ(a.counts.exchanged_rows, b.counts.exchanged_rows);
  EXPECT_EQ(a.counts.exchanged_mails, b.counts.exchanged_mails);
}

}  // namespace
}  // namespace depbloom::train
