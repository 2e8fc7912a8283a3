// The coherence loss of intra-batch refinement (refine.coherence_weight, issue 17) and
// refinement under JODIE's projection: the f64 gradient of a whole step with 4 micro-batches
// matches central differences of the step's objective with the coherence target held fixed
// (it is a constant to the gradient); the target is the updater applied to each sampled
// copy's base row with its earlier in-batch mails in order (checked against a loop written
// here); with weight 0 nothing changes, and with a positive weight the parameters move.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "depbloom/train/trainer.h"
#include "unit/train/active_refiner.h"
#include "unit/train/tiny_stream.h"
#include "unit/train/updater_reference.h"

namespace dbtraintest {
namespace {

using depbloom::Device;
using depbloom::DType;
using depbloom::Tensor;
using depbloom::model::EmbeddingKind;
using depbloom::model::MemoryKind;
using depbloom::model::RefineStart;
using depbloom::train::RefineAggregate;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

struct CoherenceCase {
  const char* name;
  MemoryKind memory;
  EmbeddingKind embedding;
  RefineAggregate aggregate;
  double weight;          // the coherence loss's weight (0: off)
  bool mail_dt_at_event;  // the TGN authors' mail time (recurrent updaters only)
  bool standardise_time;  // JODIE's dt normalisation: standardised, or TGL's dt / (t + 1)
  RefineStart start = RefineStart::identity;  // refine.start
};
void PrintTo(const CoherenceCase& c, std::ostream* os) {
  *os << c.name;
}

TrainerConfig coherence_config(const CoherenceCase& c, double lr) {
  TrainerConfig cfg;
  cfg.model.memory = c.memory;
  cfg.model.embedding = c.embedding;
  cfg.model.d_mem = 4;
  cfg.model.d_mem_time = 3;
  cfg.model.d_emb = 4;
  cfg.model.d_gnn_time = 3;
  cfg.model.layers = 1;
  cfg.model.neighbours = 3;
  cfg.model.heads = 2;
  cfg.model.memory_heads = 2;
  cfg.model.mailbox = c.memory == MemoryKind::transformer ? 2 : 1;
  cfg.model.dropout = 0.0;
  cfg.model.refine_hidden = 5;
  cfg.model.mail_dt_at_event = c.mail_dt_at_event;
  cfg.model.neighbour_reads = depbloom::model::NeighbourReads::slots;
  cfg.model.coherence_weight = c.weight;
  cfg.model.refine_start = c.start;
  cfg.standardise_time = c.standardise_time;
  cfg.deliver_to_neighbours = c.memory == MemoryKind::transformer;
  cfg.batch_size = 8;
  cfg.eval_batch_size = 8;
  cfg.lr = lr;
  cfg.seed = 3;
  cfg.device = Device::cpu();
  cfg.dtype = DType::f64;
  cfg.refine_micro_batches = 4;
  cfg.refine_aggregate = c.aggregate;
  cfg.refine_coherence_sample = 0.6;
  return cfg;
}

// Two training steps fill memory and mailboxes; the third batch is the checked one.
const int64_t* warm_up(Trainer& t, const depbloom::data::ChronoSplit& split) {
  const int64_t b = t.config().batch_size;
  const int64_t* train = split.train.data();
  t.train_step(depbloom::train::contiguous_part(train, b, 0, 1), 1);
  t.train_step(depbloom::train::contiguous_part(train + b, b, 0, 1), 1);
  return train + 2 * b;
}

std::vector<double> values_of(const Tensor& t) {
  return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
}

// The step's objective with the coherence target fixed at `target`: the task loss plus
// weight * mean over the sampled copies of |s'_c - target_c|^2, s' read from the step.
double frozen_objective(Trainer& t, const int64_t* batch, double weight,
                        const std::vector<double>& target) {
  t.step_loss(batch, t.config().batch_size, 1, false);
  const auto& p = t.last_plan();
  double loss = t.last_step().local_loss;
  if (p.coherence.copy.empty()) return loss;
  const Tensor& updated = t.last_step().updated;
  const int64_t d = updated.dim(1), u = p.memory_rows();
  const auto s = static_cast<int64_t>(p.coherence.copy.size());
  double sq = 0;
  for (int64_t j = 0; j < s; ++j) {
    const int64_t row = u + p.coherence.copy[static_cast<size_t>(j)];
    for (int64_t c = 0; c < d; ++c) {
      const double diff =
          updated.data<double>()[row * d + c] - target[static_cast<size_t>(j * d + c)];
      sq += diff * diff;
    }
  }
  return loss + weight * sq / static_cast<double>(s);
}

class CoherenceGradTest : public ::testing::TestWithParam<CoherenceCase> {};

TEST_P(CoherenceGradTest, StepMatchesCentralDifferencesWithTheTargetFixed) {
  const CoherenceCase& c = GetParam();
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  Trainer trainer(stream, split, coherence_config(c, 1e-3));
  make_refiner_active(trainer.parameters());
  const int64_t* batch = warm_up(trainer, split);
  const int64_t b = trainer.config().batch_size;
  const double loss = trainer.step_loss(batch, b, 1, true);
  ASSERT_TRUE(std::isfinite(loss));
  const auto& plan = trainer.last_plan();
  ASSERT_GT(plan.refined_rows(), 0) << "the step refines nothing";
  std::vector<double> target;
  if (c.weight > 0) {
    ASSERT_FALSE(plan.coherence.copy.empty()) << "no copy drawn for the coherence loss";
    ASSERT_LT(plan.coherence.copy.size(), static_cast<size_t>(plan.refined_rows()))
        << "a sample of 0.6 drew every copy";
    ASSERT_GT(trainer.last_step().coherence_loss, 1e-12);
    target = values_of(trainer.last_step().coherence_target);
  } else {
    ASSERT_TRUE(plan.coherence.copy.empty());
  }
  EXPECT_NEAR(frozen_objective(trainer, batch, c.weight, target), loss, 1e-12 * (1 + loss));
  trainer.step_loss(batch, b, 1, true);  // the gradient again (frozen_objective cleared none)
  auto& store = trainer.parameters();
  const int64_t n = store.numel();
  const std::vector<double> analytic(store.grads().data<double>(),
                                     store.grads().data<double>() + n);
  double* x = store.values().data<double>();
  int failures = 0;
  double refiner_grad = 0;
  for (const auto& e : store.entries()) {
    for (int64_t i = e.offset; i < e.offset + e.shape.numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + 1e-6;
      const double up = frozen_objective(trainer, batch, c.weight, target);
      x[i] = saved - 1e-6;
      const double down = frozen_objective(trainer, batch, c.weight, target);
      x[i] = saved;
      const double numeric = (up - down) / 2e-6;
      const double a = analytic[static_cast<size_t>(i)];
      if (e.name.rfind("refine.", 0) == 0) refiner_grad = std::max(refiner_grad, std::fabs(a));
      if (std::fabs(numeric - a) <= 1e-6 + 1e-4 * std::fabs(numeric)) continue;
      if (++failures <= 8)
        ADD_FAILURE() << e.name << "[" << (i - e.offset) << "]: analytic " << a << ", numeric "
                      << numeric;
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(refiner_grad, 1e-9) << "the refiner gets no gradient";
}

const CoherenceCase kGradCases[] = {
    {"tgn_last_coherence", MemoryKind::gru, EmbeddingKind::attention, RefineAggregate::last, 0.7,
     false, true},
    {"tgn_mean_coherence_mail_dt_at_event", MemoryKind::gru, EmbeddingKind::attention,
     RefineAggregate::mean, 0.7, true, true},
    {"apan_last_coherence", MemoryKind::transformer, EmbeddingKind::identity, RefineAggregate::last,
     0.7, false, true},
    {"jodie_mean", MemoryKind::rnn, EmbeddingKind::jodie, RefineAggregate::mean, 0.0, false, true},
    {"jodie_last_tgl_time_coherence", MemoryKind::rnn, EmbeddingKind::jodie, RefineAggregate::last,
     0.7, false, false},
    // The correction started from the updater's output, trained through it.
    {"tgn_last_start_updater", MemoryKind::gru, EmbeddingKind::attention, RefineAggregate::last,
     0.0, false, true, RefineStart::updater},
    {"tgn_mean_coherence_start_updater_mail_dt_at_event", MemoryKind::gru, EmbeddingKind::attention,
     RefineAggregate::mean, 0.7, true, true, RefineStart::updater},
    {"apan_last_start_updater", MemoryKind::transformer, EmbeddingKind::identity,
     RefineAggregate::last, 0.0, false, true, RefineStart::updater},
    {"jodie_last_start_updater_mail_dt_at_event", MemoryKind::rnn, EmbeddingKind::jodie,
     RefineAggregate::last, 0.0, true, true, RefineStart::updater},
};
INSTANTIATE_TEST_SUITE_P(Models, CoherenceGradTest, ::testing::ValuesIn(kGradCases),
                         [](const ::testing::TestParamInfo<CoherenceCase>& info) {
                           return std::string(info.param.name);
                         });

// The target, written out here: for each sampled copy, from its base row, the GRU applied to
// each earlier in-batch event's mail [s_self || s_other || edge] in time order, with the dt
// the updater would read it with (TGL: until the node's next event, or the copy's own time
// after the last; the TGN authors': since the node's previous update).
class CoherenceTargetTest : public ::testing::TestWithParam<bool> {};

TEST_P(CoherenceTargetTest, IsTheUpdaterAppliedToTheEarlierMailsInOrder) {
  const bool at_event = GetParam();
  const CoherenceCase c{
      "tgn", MemoryKind::gru, EmbeddingKind::attention, RefineAggregate::last, 0.5, at_event, true};
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  TrainerConfig cfg = coherence_config(c, 1e-3);
  cfg.refine_coherence_sample = 1.0;
  Trainer trainer(stream, split, cfg);
  const int64_t* batch = warm_up(trainer, split);
  trainer.step_loss(batch, cfg.batch_size, 1, false);
  const auto& p = trainer.last_plan();
  const auto& step = trainer.last_step();
  ASSERT_EQ(p.coherence.copy.size(), static_cast<size_t>(p.refined_rows())) << "sample 1 drew";
  GruReference gru(trainer, stream.edge_dim);
  const int64_t d = cfg.model.d_mem;
  // The micro-batch reading each copy: the micro-batch of any root reading it (t0-relative
  // start time), found from the redirected reads.
  std::vector<double> read_start(static_cast<size_t>(p.refined_rows()), -1e300);
  const int64_t u = p.memory_rows(), events = p.batch();
  const auto start_of = [&](int64_t root) {
    const auto e = static_cast<size_t>(root % events);
    size_t j = 0;
    while (p.micro_bounds[j + 1] <= static_cast<int64_t>(e)) ++j;
    return p.root_time[static_cast<size_t>(p.micro_bounds[j])];
  };
  for (int64_t r = 0; r < p.roots(); ++r) {
    const int32_t row = p.root_row[static_cast<size_t>(r)];
    if (row >= u) read_start[static_cast<size_t>(row - u)] = start_of(r);
    for (int64_t k = 0; k < p.blocks.hop(0).k; ++k) {
      const int32_t slot = p.slot_row[0][static_cast<size_t>(r * p.blocks.hop(0).k + k)];
      if (slot >= u) read_start[static_cast<size_t>(slot - u)] = start_of(r);
    }
  }
  const auto micro_start = [&](size_t copy) { return read_start[copy]; };
  const Tensor target = step.coherence_target;
  int sequences = 0;
  for (size_t j = 0; j < p.coherence.copy.size(); ++j) {
    const auto copy = static_cast<size_t>(p.coherence.copy[j]);
    const int32_t base = p.refine.row[copy];
    std::vector<double> h(gru.row(trainer, base), gru.row(trainer, base) + d);
    const int64_t begin = p.refine.begin[copy], count = p.refine.count[copy];
    sequences += count > 1;
    double previous = step.rows.last_update.data<double>()[step.staged.input_row(base)];
    for (int64_t i = 0; i < count; ++i) {
      const auto at = static_cast<size_t>(begin + i);
      const auto mail = static_cast<size_t>(2 * p.refine.event_pos[at] + p.refine.event_role[at]);
      std::vector<double> msg = gru.mail(trainer, stream, mail);
      const double t = p.writes.mail_time[mail];
      double dt;
      if (at_event) {
        dt = t - previous;
      } else {
        // After the last, the copy's read: its row's time, or the start of the reading
        // micro-batch when later (a neighbour's row at an older edge time).
        const double next =
            i + 1 < count ? p.writes.mail_time[static_cast<size_t>(2 * p.refine.event_pos[at + 1] +
                                                                   p.refine.event_role[at + 1])]
                          : std::max(p.mem_time[static_cast<size_t>(base)], micro_start(copy));
        dt = next - t;
      }
      previous = t;
      gru.apply(h, msg, dt);
    }
    for (int64_t k = 0; k < d; ++k)
      EXPECT_NEAR(target.data<double>()[static_cast<int64_t>(j) * d + k], h[static_cast<size_t>(k)],
                  1e-12)
          << "copy " << copy << " (" << count << " earlier events), column " << k;
  }
  EXPECT_GT(sequences, 0) << "no copy with two or more earlier events: nothing sequential";
}

INSTANTIATE_TEST_SUITE_P(MailTimes, CoherenceTargetTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "at_event" : "at_read");
                         });

// Weight 0 (whatever the sample) is the refined run without the loss, bit for bit; a
// positive weight moves the parameters (so the comparison can fail).
TEST(CoherenceOff, WeightZeroChangesNothing) {
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  const CoherenceCase base{
      "tgn", MemoryKind::gru, EmbeddingKind::attention, RefineAggregate::mean, 0.0, false, true};
  TrainerConfig plain = coherence_config(base, 1e-2);
  plain.refine_coherence_sample = 0.1;  // the default
  TrainerConfig zero = plain;
  zero.refine_coherence_sample = 0.9;
  TrainerConfig on = plain;
  on.model.coherence_weight = 0.5;
  std::vector<std::vector<double>> params, traces;
  for (const TrainerConfig* cfg : {&plain, &zero, &on}) {
    Trainer t(stream, split, *cfg);
    make_refiner_active(t.parameters());
    const int64_t b = cfg->batch_size;
    for (int64_t s = 0; s + b <= 40; s += b)
      t.train_step(depbloom::train::contiguous_part(split.train.data() + s, b, 0, 1), 1);
    if (cfg->model.coherence_weight == 0) {
      EXPECT_TRUE(t.last_plan().coherence.copy.empty());
    }
    params.push_back(values_of(t.parameters().values()));
    traces.push_back(t.loss_trace());
  }
  EXPECT_EQ(params[0], params[1]);
  EXPECT_EQ(traces[0], traces[1]);
  EXPECT_NE(params[0], params[2]) << "a positive coherence weight changed nothing";
}

}  // namespace
}  // namespace dbtraintest
