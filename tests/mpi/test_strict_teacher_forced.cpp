// `strict` equals one rank at every step of a whole epoch (issue 14), teacher-forced in f64:
// before each step the P-rank trainer is given the 1-rank run's parameters, Adam state and
// node state (Trainer::save/load), both run the same global batch, and the loss, the reduced
// gradient (relative to its norm), the parameters after Adam and every node-state row must
// agree within 1e-10. So a difference at one step cannot hide behind drift from earlier ones.
// Alongside, a free-running P-rank trainer reports how far it drifts (printed, not asserted:
// docs/dist.md). Runs under mpirun with 2 and 4 ranks (label mpi) on a 30,000-event WIKI
// prefix; DEPBLOOM_TEACHER_EVENTS=0 runs the whole stream (by hand: minutes per model).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "depbloom/dist/communicator.h"
#include "depbloom/dist/local_communicator.h"
#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

constexpr double kTolerance = 1e-10;

int64_t prefix_events() {
  const char* env = std::getenv("DEPBLOOM_TEACHER_EVENTS");
  return env != nullptr ? std::atoll(env) : 30000;
}

const dbtest::WikiStream& wiki() {
  static const dbtest::WikiStream w = dbtest::load_wiki(prefix_events());
  return w;
}

dist::Communicator& world() {
  static std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi", Device::cpu());
  return *comm;
}

// configs/tgn-wiki.yaml's batch, with dropout, in f64.
TrainerConfig tgn() {
  TrainerConfig c;
  c.dtype = DType::f64;
  c.batch_size = 600;
  c.model.dropout = 0.1;
  return c;
}

TrainerConfig apan() {
  TrainerConfig c = tgn();
  c.model.memory = model::MemoryKind::transformer;
  c.model.embedding = model::EmbeddingKind::identity;
  c.model.mailbox = 10;
  c.model.memory_heads = 2;
  c.deliver_to_neighbours = true;
  return c;
}

const double* f64_data(const Tensor& t) {
  return t.data<double>();
}

// max |a - b| over two f64 tensors of one shape.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(f64_data(a)[i] - f64_data(b)[i]));
  return worst;
}

double norm(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += f64_data(t)[i] * f64_data(t)[i];
  return std::sqrt(s);
}

double rel(double a, double b) {
  return std::abs(a - b) / std::max(1e-300, std::abs(b));
}

// The worst differences of one step between the P-rank and the 1-rank trainer.
struct StepDiff {
  double loss = 0, grad = 0, params = 0, state = 0;
  void widen(const StepDiff& o) {
    loss = std::max(loss, o.loss);
    grad = std::max(grad, o.grad);
    params = std::max(params, o.params);
    state = std::max(state, o.state);
  }
};

StepDiff compare(Trainer& many, double many_loss, Trainer& one, double one_loss) {
  StepDiff d;
  d.loss = rel(many_loss, one_loss);
  const Tensor& g1 = one.parameters().grads();
  d.grad = max_abs_diff(many.parameters().grads(), g1) / std::max(1e-300, norm(g1));
  d.params = max_abs_diff(many.parameters().values(), one.parameters().values());
  const model::NodeState& a = many.state();
  const model::NodeState& b = one.state();
  d.state = std::max({max_abs_diff(a.memory(), b.memory()),
                      max_abs_diff(a.last_update(), b.last_update()),
                      max_abs_diff(a.mail(), b.mail()), max_abs_diff(a.mail_ts(), b.mail_ts())});
  EXPECT_EQ(a.ring_heads(), b.ring_heads());
  EXPECT_EQ(a.ring_counts(), b.ring_counts());
  return d;
}

void expect_teacher_forced_equal(const char* name, TrainerConfig cfg) {
  const dbtest::WikiStream& w = wiki();
  dist::Communicator& comm = world();
  ASSERT_GE(comm.size(), 2) << "run this suite through mpirun -np 2 or more";
  dist::LocalCommunicator local(cfg.device);
  cfg.comm = &local;
  Trainer one(w.stream, w.split, cfg);
  cfg.comm = &comm;
  Trainer many(w.stream, w.split, cfg);
  Trainer free(w.stream, w.split, cfg);  // free-running: never given the 1-rank state

  const Schedule& s1 = one.schedule_epoch();
  const Schedule& sp = many.schedule_epoch();
  const Schedule& sf = free.schedule_epoch();
  ASSERT_EQ(s1.size(), sp.size());
  StepDiff worst;
  for (int64_t i = 0; i < s1.size(); ++i) {
    many.load(one.save(1, ""));
    const double l1 = one.train_step(s1.step(i), 1);
    const double lp = many.train_step(sp.step(i), 1);
    const double lf = free.train_step(sf.step(i), 1);
    const StepDiff d = compare(many, lp, one, l1);
    worst.widen(d);
    EXPECT_LT(d.loss, kTolerance) << name << " step " << i + 1 << ": " << lp << " vs " << l1;
    EXPECT_LT(d.grad, kTolerance) << name << " step " << i + 1;
    EXPECT_LT(d.params, kTolerance) << name << " step " << i + 1;
    EXPECT_LT(d.state, kTolerance) << name << " step " << i + 1;
    if (comm.rank() == 0)
      std::printf("[%s, %d ranks] step %lld: free-running loss rel. diff %.2e\n", name, comm.size(),
                  static_cast<long long>(i + 1), rel(lf, l1));
  }
  if (comm.rank() == 0)
    std::printf(
        "[%s, %d ranks] %lld steps teacher-forced: worst loss rel. diff %.1e, gradient %.1e "
        "(of its norm), parameters %.1e, node state %.1e\n",
        name, comm.size(), static_cast<long long>(s1.size()), worst.loss, worst.grad, worst.params,
        worst.state);
  std::fflush(stdout);
}

TEST(StrictTeacherForced, TgnWithDropoutEqualsOneRankAtEveryStep) {
  expect_teacher_forced_equal("tgn", tgn());
}

TEST(StrictTeacherForced, ApanWithDropoutEqualsOneRankAtEveryStep) {
  expect_teacher_forced_equal("apan", apan());
}

}  // namespace
}  // namespace depbloom::train
