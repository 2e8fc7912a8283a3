// The `strict` strategy under mpirun (2 and 4 ranks, label mpi): data-parallel training on a
// fixed prefix of the shipped WIKI stream must follow the 1-rank trainer with the same global
// batch step by step (loss trace, validation AP, and every rank's node state afterwards), for
// TGN, for APAN (mailbox 3, mails delivered to neighbours) and for a global batch that does
// not divide evenly among the ranks, and with dropout and uniform neighbour sampling (every
// draw is keyed by the root's (event, role) or the memory row's (node, time), never by its
// place in a rank's slice). Each rank also runs the 1-rank reference itself, with a local
// communicator. On a GPU, CudaRanksOverMpiMatchOneRank does the same for CUDA ranks sharing
// GPU 0 over the MPI communicator (ctest strict_training_cuda_np2, label gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/dist/local_communicator.h"
#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

using dist::CollectiveKind;

constexpr int64_t kPrefixEvents = 6000;

using Prefix = dbtest::WikiStream;

const Prefix& wiki_prefix() {
  static const Prefix prefix = dbtest::load_wiki(kPrefixEvents);
  return prefix;
}

dist::Communicator& world() {
  static std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi", Device::cpu());
  return *comm;
}

// CUDA ranks over MPI (host staging), every rank on GPU 0: NCCL would need one GPU per rank.
dist::Communicator& world_on_gpu() {
  static std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi", Device::cuda(0));
  return *comm;
}

TrainerConfig tgn(int64_t batch) {
  TrainerConfig c;
  c.model.dropout = 0.0;
  c.batch_size = batch;
  c.eval_batch_size = 200;
  c.max_batches = 10;
  return c;
}

TrainerConfig apan(int64_t batch) {
  TrainerConfig c = tgn(batch);
  c.model.memory = model::MemoryKind::transformer;
  c.model.embedding = model::EmbeddingKind::identity;
  c.model.mailbox = 3;
  c.model.memory_heads = 2;
  c.deliver_to_neighbours = true;
  return c;
}

double rel(double a, double b) {
  return std::abs(a - b) / std::max(1e-12, std::abs(b));
}

// A host copy of a (CUDA) tensor, for reading.
OwnedTensor on_host(const Tensor& t) {
  OwnedTensor h(t.dtype(), t.shape());
  ops::copy(h.view(), t);
  if (t.device().is_cuda()) backend::synchronize(t.device().index);
  return h;
}

float max_abs_diff(const Tensor& dev_a, const Tensor& dev_b) {
  const OwnedTensor host_a = on_host(dev_a), host_b = on_host(dev_b);
  const Tensor a = host_a.view(), b = host_b.view();
  EXPECT_EQ(a.numel(), b.numel());
  if (a.dtype() == DType::f64) {
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
      worst = std::max(worst, std::abs(a.data<double>()[i] - b.data<double>()[i]));
    return static_cast<float>(worst);
  }
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

struct Tolerance {
  double loss = 1e-4;   // relative, per step
  double ap = 1e-4;     // relative, validation AP
  double state = 1e-5;  // absolute, node state
};

void expect_strict_matches_one_rank(const char* name, TrainerConfig cfg, Tolerance tol = {}) {
  const Prefix& p = wiki_prefix();
  dist::Communicator& comm = cfg.device.is_cuda() ? world_on_gpu() : world();
  ASSERT_GE(comm.size(), 2) << "run this suite through mpirun -np 2 or more";
  dist::LocalCommunicator local(cfg.device);  // the factory refuses it under mpirun

  Stopwatch watch;
  cfg.comm = &local;
  Trainer one(p.stream, p.split, cfg);
  EpochResult r1 = one.run_epoch(1);
  const double one_s = watch.seconds();

  watch.restart();
  cfg.comm = &comm;
  Trainer many(p.stream, p.split, cfg);
  EpochResult rp = many.run_epoch(1);
  const double many_s = watch.seconds();

  ASSERT_EQ(one.loss_trace().size(), many.loss_trace().size());
  ASSERT_EQ(r1.batches, rp.batches);
  EXPECT_EQ(r1.events, rp.events);
  double worst = 0;
  for (size_t i = 0; i < one.loss_trace().size(); ++i) {
    const double d = rel(many.loss_trace()[i], one.loss_trace()[i]);
    worst = std::max(worst, d);
    EXPECT_LT(d, tol.loss) << name << " step " << i + 1 << ": " << many.loss_trace()[i] << " vs "
                           << one.loss_trace()[i];
  }
  ASSERT_TRUE(r1.val.valid && rp.val.valid);
  EXPECT_LT(rel(rp.val.whole.ap, r1.val.whole.ap), tol.ap) << name;
  EXPECT_LT(rel(rp.val.batch_mean.ap, r1.val.batch_mean.ap), tol.ap) << name;

  // Every rank's node state is the 1-rank one (after training and validation, which replay
  // the same writes on every rank).
  const model::NodeState& s1 = one.state();
  const model::NodeState& sp = many.state();
  const float mem = max_abs_diff(sp.memory(), s1.memory());
  const float last = max_abs_diff(sp.last_update(), s1.last_update());
  const float mail = max_abs_diff(sp.mail(), s1.mail());
  const float mail_ts = max_abs_diff(sp.mail_ts(), s1.mail_ts());
  EXPECT_LT(mem, tol.state) << name;
  EXPECT_LT(last, tol.state) << name;
  EXPECT_LT(mail, tol.state) << name;
  EXPECT_LT(mail_ts, tol.state) << name;
  EXPECT_EQ(sp.ring_heads(), s1.ring_heads()) << name;
  EXPECT_EQ(sp.ring_counts(), s1.ring_counts()) << name;

  // The accounting: per step one all-reduce of the gradients, one small all-gather of the
  // per-rank counts and loss, six all-gather-v of the written rows; the gradient bytes are
  // the parameters; the 1-rank run made no collective.
  const int64_t steps = rp.batches;
  EXPECT_EQ(rp.ranks, comm.size());
  EXPECT_EQ(rp.comm[CollectiveKind::all_reduce].calls, steps);
  EXPECT_EQ(rp.comm[CollectiveKind::all_reduce].bytes,
            steps * many.parameter_count() * static_cast<int64_t>(dtype_size(cfg.dtype)));
  EXPECT_EQ(rp.comm[CollectiveKind::all_gather].calls, steps);
  EXPECT_EQ(rp.comm[CollectiveKind::all_gather_v].calls, 6 * steps);
  // Really split: this rank trained on its slices only.
  const auto& train = p.split.train;
  int64_t mine = 0;
  for (int64_t b = 0; b < steps; ++b) {
    const int64_t count =
        std::min(cfg.batch_size, static_cast<int64_t>(train.size()) - b * cfg.batch_size);
    mine += (comm.rank() + 1) * count / comm.size() - comm.rank() * count / comm.size();
  }
  EXPECT_EQ(rp.counts.local_events, mine);
  // The gathers carry 5 f64 per rank, then exactly the rows written: per memory row a node
  // id, a row and a time; per mail a node id, a mail row and a time.
  const auto ds = static_cast<int64_t>(dtype_size(cfg.dtype));
  EXPECT_EQ(rp.comm[CollectiveKind::all_gather].bytes, steps * 5 * 8 * comm.size());
  const model::NodeState& st = many.state();
  EXPECT_GT(rp.counts.exchanged_rows, 0);
  EXPECT_GE(rp.counts.exchanged_mails, 2 * rp.events);
  EXPECT_EQ(rp.comm[CollectiveKind::all_gather_v].bytes,
            rp.counts.exchanged_rows * (4 + ds * st.memory_dim() + ds) +
                rp.counts.exchanged_mails * (4 + ds * st.mail_dim() + ds));
  EXPECT_EQ(r1.comm.total_calls(), 0);
  if (comm.rank() == 0) {
    std::printf(
        "[%s, %d ranks] %lld steps; worst step loss rel. diff %.2e; val AP %.6f vs %.6f; "
        "state max diff mem %.1e mail %.1e; 1 rank %.2f s, %d ranks %.2f s; "
        "all_gather_v %.2f MB\n",
        name, comm.size(), static_cast<long long>(steps), worst, rp.val.whole.ap, r1.val.whole.ap,
        mem, mail, one_s, comm.size(), many_s,
        static_cast<double>(rp.comm[CollectiveKind::all_gather_v].bytes) / 1e6);
    std::fflush(stdout);
  }
}

// The equivalence runs in f64: in f32 the P-rank gradient differs from the 1-rank one by
// summation order (~1e-7 relative), and Adam turns the rounding noise of near-zero gradient
// entries into update differences of a sizeable fraction of the learning rate; through the
// memory these grow about tenfold per step (measured: step 4 4e-7, step 6 4e-5, step 7 4e-3
// relative loss difference), while in f64 the same runs agree to ~1e-12. F32ShortHorizon
// checks f32 over the steps where rounding has not yet grown.
TrainerConfig f64(TrainerConfig c) {
  c.dtype = DType::f64;
  return c;
}

TEST(StrictTraining, TgnMatchesOneRank) {
  expect_strict_matches_one_rank("tgn", f64(tgn(200)));
}

TEST(StrictTraining, ApanNeighbourMailsMatchOneRank) {
  expect_strict_matches_one_rank("apan", f64(apan(200)));
}

TEST(StrictTraining, UnevenGlobalBatchMatchesOneRank) {
  // 203 events: slices of 101/102 (2 ranks), 50/51/51/51 (4 ranks).
  expect_strict_matches_one_rank("tgn-b203", f64(tgn(203)));
}

TEST(StrictTraining, TinyBatchLeavesSomeRanksEmpty) {
  // 3 events: slices 1/2 with 2 ranks; 0/1/1/1 with 4 (rank 0 trains on nothing and still
  // takes part in every collective).
  TrainerConfig c = f64(apan(3));
  c.max_batches = 8;
  expect_strict_matches_one_rank("apan-b3", c);
}

// Dropout in the attention layer (both styles) and uniform sampling: the masks and draws of
// a root follow it into whichever rank's slice holds its event.
TEST(StrictTraining, DropoutAndUniformSamplingMatchOneRank) {
  TrainerConfig c = f64(tgn(200));
  c.model.dropout = 0.2;
  c.uniform_sampling = true;
  c.max_batches = 5;
  expect_strict_matches_one_rank("tgn-dropout", c);
  c.model.attention_style = model::AttentionStyle::tgn;
  expect_strict_matches_one_rank("tgn-authors-dropout", c);
}

// APAN drops out memory rows (deduplicated (node, time) pairs; each rank has its own set).
TEST(StrictTraining, ApanDropoutMatchesOneRank) {
  TrainerConfig c = f64(apan(200));
  c.model.dropout = 0.2;
  c.max_batches = 5;
  expect_strict_matches_one_rank("apan-dropout", c);
}

TEST(StrictTraining, F32ShortHorizon) {
  TrainerConfig c = tgn(200);
  c.max_batches = 4;
  Tolerance tol;
  tol.ap = 1e-3;
  tol.state = 1e-2;  // after the validation pass too (measured 2.3e-3)
  expect_strict_matches_one_rank("tgn-f32", c, tol);
}

// Issue 6's GPU line: CUDA ranks over the MPI communicator follow the 1-rank CUDA trainer
// (CUDA ops are f32: F32ShortHorizon's steps and tolerances). Skips without a usable GPU.
TEST(StrictTraining, CudaRanksOverMpiMatchOneRank) {
  std::string why;
  if (!backend::cuda_usable(&why)) GTEST_SKIP() << why;
  TrainerConfig c = tgn(200);
  c.device = Device::cuda(0);
  c.max_batches = 4;
  Tolerance tol;
  tol.ap = 1e-3;
  tol.state = 1e-2;
  expect_strict_matches_one_rank("tgn-cuda-f32", c, tol);
}

}  // namespace
}  // namespace depbloom::train
