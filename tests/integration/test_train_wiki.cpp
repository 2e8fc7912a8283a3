// End-to-end training on a fixed prefix of the shipped WIKI stream (TGN's split protocol)
// with train::Trainer: TGN, JODIE, APAN and the memory-less model must each learn. Every
// test prints what it reached; the floors sit a few points below the values measured on
// the CPU (2 cores, Release), stated beside them, to leave room for other thread counts,
// compilers and devices (the values do not depend on the thread count). The whole file
// takes about 16 s alone on 2 cores.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>

#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

constexpr int64_t kPrefixEvents = 30000;
constexpr int kEpochs = 2;  // JODIE, fast and slow to learn, gets kJodieEpochs
constexpr int kJodieEpochs = 3;
constexpr uint64_t kSeed = 0;

using Prefix = dbtest::WikiStream;

// The first kPrefixEvents events of the shipped WIKI stream.
const Prefix& wiki_prefix() {
  static const Prefix prefix = dbtest::load_wiki(kPrefixEvents, kSeed);
  EXPECT_EQ(prefix.stream.num_events(), kPrefixEvents);  // the file holds more than the cut
  return prefix;
}

// TrainerConfig's defaults are TGN's (configs/tgn-wiki.yaml).
TrainerConfig tgn() {
  return TrainerConfig{};
}

TrainerConfig jodie() {
  TrainerConfig c;
  c.model.memory = model::MemoryKind::rnn;
  c.model.embedding = model::EmbeddingKind::jodie;
  c.model.neighbours = 1;
  c.model.dropout = 0.1;
  return c;
}

TrainerConfig apan() {
  TrainerConfig c;
  c.model.memory = model::MemoryKind::transformer;
  c.model.embedding = model::EmbeddingKind::identity;
  c.model.mailbox = 10;
  c.model.memory_heads = 2;
  c.deliver_to_neighbours = true;
  c.model.dropout = 0.1;
  return c;
}

TrainerConfig tgn_without_memory() {  // TGAT-style: TGN's attention layer, no memory
  TrainerConfig c;
  c.model.memory = model::MemoryKind::none;
  return c;
}

// Trains `epochs` epochs, then tests; returns {transductive, new-node} test results.
std::pair<EvalResult, EvalResult> train_and_test(const char* name, TrainerConfig cfg,
                                                 int epochs = kEpochs) {
  const Prefix& p = wiki_prefix();
  cfg.seed = kSeed;
  Stopwatch watch;
  Trainer trainer(p.stream, p.split, cfg);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    EpochResult r = trainer.run_epoch(epoch);
    std::printf("[%s] epoch %d: loss %.4f, %.2f s train; val AP %.4f (per-batch %.4f)\n", name,
                epoch, r.loss, r.train_seconds, r.val.whole.ap, r.val.batch_mean.ap);
    EXPECT_TRUE(r.val.valid);
    EXPECT_GT(r.events, 0);
  }
  auto result = trainer.test();
  const EvalResult& t = result.first;
  const EvalResult& tn = result.second;
  std::printf(
      "[%s] test AP %.4f AUC %.4f (per-batch AP %.4f AUC %.4f); new-node per-batch AP "
      "%.4f; %.1f s in all\n",
      name, t.whole.ap, t.whole.auc, t.batch_mean.ap, t.batch_mean.auc, tn.batch_mean.ap,
      watch.seconds());
  std::fflush(stdout);
  EXPECT_TRUE(t.valid);
  EXPECT_GT(t.events, 0);
  return result;
}

TEST(TrainWikiPrefix, SplitIsTgnProtocol) {
  const Prefix& p = wiki_prefix();
  EXPECT_EQ(p.stream.num_events(), kPrefixEvents);
  EXPECT_GT(p.split.train.size(), p.split.val.size());
  EXPECT_GT(p.split.val.size(), 0u);
  EXPECT_GT(p.split.test.size(), 0u);
  EXPECT_GT(p.split.new_node_test.size(), 0u);
}

// The floors: test per-batch mean AP (what TGN, TGL and PyG print) after kEpochs epochs,
// a few points under the value measured on 2 cores (Release, CPU). Chance is 0.5.

// TGN and the memory-less model, each trained once and shared by the tests below.
const std::pair<EvalResult, EvalResult>& tgn_result() {
  static const auto result = train_and_test("tgn", tgn());
  return result;
}
const std::pair<EvalResult, EvalResult>& no_memory_result() {
  static const auto result = train_and_test("no-memory", tgn_without_memory());
  return result;
}

TEST(TrainWikiPrefix, TgnLearns) {
  const auto& [test, test_new] = tgn_result();
  EXPECT_GT(test.batch_mean.ap, 0.90);      // measured 0.9287
  EXPECT_GT(test_new.batch_mean.ap, 0.89);  // measured 0.9251 (new-node test)
}

TEST(TrainWikiPrefix, JodieLearns) {
  // JODIE learns slowly at TGL's learning rate on this featureless stream.
  auto [test, test_new] = train_and_test("jodie", jodie(), kJodieEpochs);
  EXPECT_GT(test.batch_mean.ap, 0.70);  // measured 0.7640
}

TEST(TrainWikiPrefix, ApanLearns) {
  auto [test, test_new] = train_and_test("apan", apan());
  EXPECT_GT(test.batch_mean.ap, 0.68);  // measured 0.7386
}

TEST(TrainWikiPrefix, NoMemoryLearns) {                     // the TGAT-style path
  EXPECT_GT(no_memory_result().first.batch_mean.ap, 0.88);  // measured 0.9134
}

// Memory matters: 88% of WIKI's events repeat a pair, so the attention over the 10 most
// recent neighbours alone scores about 0.91; the memory must add to that. Measured on the
// prefix: 0.9287 with memory, 0.9134 without (+0.015). (With TGL's attention layer and
// dropout 0.2, as before gnn.arch tgn_attention, the memory did not pay off on this prefix:
// 0.9181 against 0.9259.) The margin asserted leaves room for other CPUs' rounding.
TEST(TrainWikiPrefix, TgnMemoryBeatsNoMemory) {
  const double with = tgn_result().first.batch_mean.ap;
  const double without = no_memory_result().first.batch_mean.ap;
  EXPECT_GT(with - without, 0.005) << "with memory " << with << ", without " << without;
}

// The shipped default run (configs/tgn-wiki.yaml: 3 epochs of the whole stream, the best
// epoch by validation) and its memory-less control. Measured: test per-batch AP 0.9282 with
// memory, 0.9102 without (+0.018) on a Zen 4 EPYC; 0.9266 and 0.9215 (+0.005) on a Zen 5
// one, the same commit (OpenBLAS's kernels differ, and one seed's 3 epochs amplify the
// rounding). The TGN authors' code reaches 0.931 on this stream.
TEST(TrainWikiWhole, TgnMemoryBeatsNoMemory) {
  static const Prefix whole = dbtest::load_wiki(0, kSeed);
  auto run = [&](const char* name, TrainerConfig cfg) {
    cfg.seed = kSeed;
    Trainer trainer(whole.stream, whole.split, cfg);
    double best = -1.0;
    Checkpoint best_ckpt;
    for (int epoch = 1; epoch <= 3; ++epoch) {  // best epoch by validation, as the CLI does
      EpochResult r = trainer.run_epoch(epoch);
      if (r.val.batch_mean.ap > best)
        best = r.val.batch_mean.ap, best_ckpt = trainer.save(epoch, "");
    }
    trainer.load(best_ckpt);
    const double ap = trainer.test().first.batch_mean.ap;
    std::printf("[%s, whole stream] test per-batch AP %.4f\n", name, ap);
    std::fflush(stdout);
    return ap;
  };
  const double with = run("tgn", tgn());
  const double without = run("no-memory", tgn_without_memory());
  EXPECT_GT(with, 0.915);
  EXPECT_GT(with - without, 0.003) << "with memory " << with << ", without " << without;
}

}  // namespace
}  // namespace depbloom::train
