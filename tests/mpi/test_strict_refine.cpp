// strict + intra-batch refinement (issue 17): each rank cuts its own slice of the step into
// micro-batches (cutting the global step would need cross-rank messages), so a node's events
// in another rank's slice are not among a row's earlier in-batch events, and the result
// depends on P. The P-rank run is checked against a one-process emulation of the slices:
// one single-device trainer runs each rank's slice (Trainer::step_loss, refinement included)
// from the step-start state, the gradients are combined by event share, and the slices'
// writes are applied in rank order (TGN writes no neighbour mails, so rank order is strict's
// write order). f64, within 1e-10 at every step, TGN with 2 micro-batches per slice, for the
// correction starting from the memory row (refine.start: identity) and from the updater.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/train/trainer.h"
#include "unit/train/active_refiner.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

dist::Communicator& strict_world() {
  static std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi", Device::cpu());
  return *comm;
}

const dbtest::WikiStream& wiki_6k() {
  static const dbtest::WikiStream w = dbtest::load_wiki(6000);
  return w;
}

double* values(const Tensor& t) {
  return t.data<double>();
}

class StrictRefine : public ::testing::TestWithParam<model::RefineStart> {};

TEST_P(StrictRefine, SlicesRefineOnTheirOwnAsTheEmulationDoes) {
  dist::Communicator& comm = strict_world();
  if (comm.size() < 2) GTEST_SKIP() << "needs 2 or more ranks";
  TrainerConfig cfg;
  cfg.model.refine_start = GetParam();
  cfg.dtype = DType::f64;
  cfg.batch_size = 200;
  cfg.model.dropout = 0.1;
  cfg.refine_micro_batches = 2;
  cfg.max_batches = 6;
  cfg.strategy.name = "strict";
  Trainer emulation(wiki_6k().stream, wiki_6k().split, cfg);
  cfg.comm = &comm;
  Trainer ranked(wiki_6k().stream, wiki_6k().split, cfg);
  // An active refiner (fc2 starts at zero), the same on both.
  for (Trainer* t : {&emulation, &ranked})
    dbtraintest::make_refiner_active(t->parameters(), 0.3, 1.3, 0.2);

  const model::NodeState& s = emulation.state();
  model::NodeState start(s.num_nodes(), s.memory_dim(), s.mail_dim(), s.mail_slots(), DType::f64);
  model::NodeState next(s.num_nodes(), s.memory_dim(), s.mail_dim(), s.mail_slots(), DType::f64);
  Arena arena(Device::cpu());
  model::ParameterStore& store = emulation.parameters();
  std::vector<double> grad(static_cast<size_t>(store.numel()));
  const Schedule& schedule = ranked.schedule_epoch();
  const std::vector<int64_t>& train = wiki_6k().split.train;
  int64_t refined = 0;
  for (int64_t i = 0; i < schedule.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "step " << i);
    const double loss = ranked.train_step(schedule.step(i), 1);
    refined += ranked.last_plan().refined_rows();
    // The emulation: every slice from the step-start state, writes in rank order.
    const int64_t begin = i * cfg.batch_size;
    const int64_t count =
        std::min<int64_t>(cfg.batch_size, static_cast<int64_t>(train.size()) - begin);
    start.copy_from(emulation.state());
    next.copy_from(start);
    std::fill(grad.begin(), grad.end(), 0.0);
    double expected = 0;
    for (int r = 0; r < comm.size(); ++r) {
      const ScheduledStep part = contiguous_part(train.data() + begin, count, r, comm.size());
      if (part.count == 0) continue;
      emulation.state().copy_from(start);
      expected += part.loss_share * emulation.step_loss(part.events, part.count, 1, true);
      for (int64_t k = 0; k < store.numel(); ++k)
        grad[static_cast<size_t>(k)] += part.loss_share * values(store.grads())[k];
      next.apply(emulation.step_writes(), model::WriteFilter{}, arena);
      arena.reset();
    }
    std::copy(grad.begin(), grad.end(), values(store.grads()));
    ops::AdamConfig adam;
    adam.lr = cfg.lr;
    store.adam_step(adam);
    emulation.state().copy_from(next);
    EXPECT_NEAR(loss, expected, 1e-10 * std::max(1.0, std::abs(expected)));
    double worst = 0;
    for (auto [a, b] : {std::pair{&ranked.state().memory(), &emulation.state().memory()},
                        std::pair{&ranked.state().mail(), &emulation.state().mail()}})
      for (int64_t k = 0; k < a->numel(); ++k)
        worst = std::max(worst, std::abs(values(*a)[k] - values(*b)[k]));
    EXPECT_LE(worst, 1e-10);
  }
  EXPECT_GT(refined, 0) << "no row was refined";
}

INSTANTIATE_TEST_SUITE_P(Starts, StrictRefine,
                         ::testing::Values(model::RefineStart::identity,
                                           model::RefineStart::updater),
                         [](const auto& info) {
                           return info.param == model::RefineStart::updater ? "updater"
                                                                            : "identity";
                         });

}  // namespace
}  // namespace depbloom::train
