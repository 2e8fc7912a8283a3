// Intra-batch refinement wired into a whole step (issue 17): with 4 micro-batches the f64
// gradient of a step's loss matches central differences in every parameter (the refiner's
// with a non-zero correction and a gate away from 0 and 1), and against a one-micro-batch
// run of the same parameters and state the embeddings change on exactly the roots that read
// a refined copy, whatever the correction starts from; and with refine.start: updater a fresh
// refiner's copies are the GRU applied to each base row with its latest earlier mail.
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
using depbloom::model::NeighbourReads;
using depbloom::model::RefineStart;
using depbloom::train::RefineAggregate;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

TrainerConfig refine_config(int32_t micro_batches, RefineAggregate aggregate, double lr) {
  TrainerConfig cfg;
  cfg.model.d_mem = 4;
  cfg.model.d_mem_time = 3;
  cfg.model.d_emb = 4;
  cfg.model.d_gnn_time = 3;
  cfg.model.layers = 1;
  cfg.model.neighbours = 3;
  cfg.model.dropout = 0.0;
  cfg.model.refine_hidden = 5;
  // Fixed slot reads: the row count (which refinement changes) cannot switch the path.
  cfg.model.neighbour_reads = NeighbourReads::slots;
  cfg.batch_size = 8;
  cfg.eval_batch_size = 8;
  cfg.lr = lr;
  cfg.seed = 3;
  cfg.device = Device::cpu();
  cfg.dtype = DType::f64;
  cfg.refine_micro_batches = micro_batches;
  cfg.refine_aggregate = aggregate;
  return cfg;
}

class RefineGradTest : public ::testing::TestWithParam<RefineAggregate> {};

TEST_P(RefineGradTest, RefinedStepMatchesCentralDifferences) {
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  const TrainerConfig cfg = refine_config(4, GetParam(), 1e-3);
  Trainer trainer(stream, split, cfg);
  make_refiner_active(trainer.parameters());
  const int64_t b = cfg.batch_size;
  const int64_t* train = split.train.data();
  trainer.train_step(depbloom::train::contiguous_part(train, b, 0, 1), 1);
  trainer.train_step(depbloom::train::contiguous_part(train + b, b, 0, 1), 1);
  const int64_t* batch = train + 2 * b;
  const double loss = trainer.step_loss(batch, b, 1, true);
  ASSERT_TRUE(std::isfinite(loss));
  ASSERT_GT(trainer.last_plan().refined_rows(), 0) << "the step refines nothing";
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
      const double up = trainer.step_loss(batch, b, 1, false);
      x[i] = saved - 1e-6;
      const double down = trainer.step_loss(batch, b, 1, false);
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

INSTANTIATE_TEST_SUITE_P(Aggregates, RefineGradTest,
                         ::testing::Values(RefineAggregate::last, RefineAggregate::mean));

// A root is refined when its own row or one of its sampled neighbours' rows is a copy (>= U).
bool reads_a_copy(const depbloom::train::BatchPlan& p, int64_t root) {
  const int64_t u = p.memory_rows();
  if (p.root_row[static_cast<size_t>(root)] >= u) return true;
  const int64_t k = p.blocks.hop(0).k;
  for (int64_t j = 0; j < k; ++j)
    if (p.slot_row[0][static_cast<size_t>(root * k + j)] >= u) return true;
  return false;
}

class RefineEmbeddingTest : public ::testing::TestWithParam<RefineStart> {};

TEST_P(RefineEmbeddingTest, EmbeddingsChangeExactlyOnRootsReadingCopies) {
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  // lr 0: the warm-up steps fill the same memory in both runs and move no parameter.
  Trainer plain(stream, split, refine_config(1, RefineAggregate::last, 0.0));
  TrainerConfig cfg = refine_config(4, RefineAggregate::last, 0.0);
  cfg.model.refine_start = GetParam();
  Trainer refined(stream, split, cfg);
  // The shared parameters by name (the refiner's are extra).
  ASSERT_TRUE(copy_by_name(plain.parameters(), refined.parameters(), "refine."));
  make_refiner_active(refined.parameters());
  const int64_t b = 8;
  const int64_t* train = split.train.data();
  for (Trainer* t : {&plain, &refined}) {
    t->train_step(depbloom::train::contiguous_part(train, b, 0, 1), 1);
    t->train_step(depbloom::train::contiguous_part(train + b, b, 0, 1), 1);
  }
  const int64_t* batch = train + 2 * b;
  plain.step_loss(batch, b, 1, false);
  refined.step_loss(batch, b, 1, false);
  const auto& p = refined.last_plan();
  ASSERT_GT(p.refined_rows(), 0);
  const depbloom::Tensor& e1 = plain.last_step().emb;
  const depbloom::Tensor& e4 = refined.last_step().emb;
  ASSERT_EQ(e1.numel(), e4.numel());
  const int64_t roots = p.roots(), d = e1.dim(1);
  int changed = 0;
  for (int64_t r = 0; r < roots; ++r) {
    double diff = 0;
    for (int64_t c = 0; c < d; ++c)
      diff = std::max(diff, std::fabs(e1.data<double>()[r * d + c] - e4.data<double>()[r * d + c]));
    if (reads_a_copy(p, r)) {
      ++changed;
      EXPECT_GT(diff, 1e-9) << "root " << r << " reads a refined copy but did not change";
    } else {
      EXPECT_EQ(diff, 0.0) << "root " << r << " reads no copy but changed";
    }
  }
  EXPECT_GT(changed, 0);
  EXPECT_LT(changed, roots);
}

INSTANTIATE_TEST_SUITE_P(Starts, RefineEmbeddingTest,
                         ::testing::Values(RefineStart::identity, RefineStart::updater),
                         [](const ::testing::TestParamInfo<RefineStart>& info) {
                           return std::string(info.param == RefineStart::identity ? "identity"
                                                                                  : "updater");
                         });

// refine.start: updater with a fresh refiner (fc2 zero, so g * f = 0): every copy is the GRU
// applied to its base row with its latest earlier in-batch mail, read at the copy's dt (TGL's
// mail time) or at that event's age since the node's previous update (the TGN authors').
class RefineStartTest : public ::testing::TestWithParam<bool> {};

TEST_P(RefineStartTest, FreshRefinerGivesTheUpdaterAppliedToTheLatestMail) {
  const bool at_event = GetParam();
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  TrainerConfig cfg = refine_config(4, RefineAggregate::last, 0.0);  // lr 0 keeps fc2 at zero
  cfg.model.refine_start = RefineStart::updater;
  cfg.model.mail_dt_at_event = at_event;
  Trainer trainer(stream, split, cfg);
  const int64_t b = cfg.batch_size;
  const int64_t* train = split.train.data();
  trainer.train_step(depbloom::train::contiguous_part(train, b, 0, 1), 1);
  trainer.train_step(depbloom::train::contiguous_part(train + b, b, 0, 1), 1);
  trainer.step_loss(train + 2 * b, b, 1, false);
  const auto& p = trainer.last_plan();
  const auto& step = trainer.last_step();
  ASSERT_GT(p.refined_rows(), 0);
  GruReference gru(trainer, stream.edge_dim);
  const int64_t d = cfg.model.d_mem, u = p.memory_rows();
  const auto mail_of = [&](int64_t i) {
    return static_cast<size_t>(2 * p.refine.event_pos[static_cast<size_t>(i)] +
                               p.refine.event_role[static_cast<size_t>(i)]);
  };
  int firsts = 0, laters = 0;
  for (int64_t c = 0; c < p.refined_rows(); ++c) {
    const auto at = static_cast<size_t>(c);
    const int32_t base = p.refine.row[at];
    const int64_t latest = p.refine.begin[at] + p.refine.count[at] - 1;
    std::vector<double> h(gru.row(trainer, base), gru.row(trainer, base) + d);
    std::vector<double> msg = gru.mail(trainer, stream, mail_of(latest));
    double dt = p.refine.dt[at];
    if (at_event) {
      const double before = p.refine.count[at] == 1
                                ? step.rows.last_update.data<double>()[step.staged.input_row(base)]
                                : p.writes.mail_time[mail_of(latest - 1)];
      dt = p.writes.mail_time[mail_of(latest)] - before;
    }
    (p.refine.count[at] == 1 ? firsts : laters) += 1;
    gru.apply(h, msg, dt);
    const double* copy = step.updated.data<double>() + (u + c) * d;
    for (int64_t k = 0; k < d; ++k)
      EXPECT_NEAR(copy[k], h[static_cast<size_t>(k)], 1e-12) << "copy " << c << ", column " << k;
  }
  EXPECT_GT(firsts, 0) << "no copy after a single earlier event";
  EXPECT_GT(laters, 0) << "no copy after two or more earlier events";
}

INSTANTIATE_TEST_SUITE_P(MailTimes, RefineStartTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "at_event" : "at_read");
                         });

}  // namespace
}  // namespace dbtraintest
