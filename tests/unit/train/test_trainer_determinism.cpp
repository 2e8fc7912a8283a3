// Determinism and resume of the Trainer in float32 on the CPU: the same seed gives the same
// loss trace bit for bit over two epochs, another seed another trace; a trainer restored
// from a checkpoint file written after epoch 1 trains epoch 2 exactly as an uninterrupted
// one does (loss trace and validation metrics); a checkpoint of another model is refused
// with a data error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"
#include "depbloom/train/checkpoint.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace dbtraintest {
namespace {

namespace fs = std::filesystem;
using depbloom::Checkpoint;
using depbloom::DType;
using depbloom::Error;
using depbloom::ErrorKind;
using depbloom::model::EmbeddingKind;
using depbloom::model::MemoryKind;
using depbloom::train::EpochResult;
using depbloom::train::EvalResult;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

struct DetCase {
  const char* name;
  MemoryKind memory;
  EmbeddingKind embedding;
  int layers;
  int mailbox;
  bool deliver_to_neighbours;
  bool uniform_sampling;
};

void PrintTo(const DetCase& c, std::ostream* os) {
  *os << c.name;
}

TrainerConfig config_for(const DetCase& c, uint64_t seed) {
  TrainerConfig cfg;
  cfg.model.memory = c.memory;
  cfg.model.embedding = c.embedding;
  cfg.model.layers = c.layers;
  cfg.model.mailbox = c.mailbox;
  cfg.model.d_mem = 8;
  cfg.model.d_mem_time = 4;
  cfg.model.d_emb = 8;
  cfg.model.d_gnn_time = 4;
  cfg.model.heads = 2;
  cfg.model.memory_heads = 2;
  cfg.model.neighbours = 4;
  cfg.model.dropout = 0.1;  // keyed by (seed, epoch, row): must replay too
  cfg.deliver_to_neighbours = c.deliver_to_neighbours;
  cfg.uniform_sampling = c.uniform_sampling;
  cfg.batch_size = 16;
  cfg.eval_batch_size = 16;
  cfg.lr = 1e-2;
  cfg.seed = seed;
  cfg.dtype = DType::f32;
  return cfg;
}

void expect_same_eval(const EvalResult& a, const EvalResult& b, const char* what) {
  EXPECT_EQ(a.valid, b.valid) << what;
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.whole.ap, b.whole.ap) << what;
  EXPECT_EQ(a.whole.auc, b.whole.auc) << what;
  EXPECT_EQ(a.batch_mean.ap, b.batch_mean.ap) << what;
  EXPECT_EQ(a.batch_mean.auc, b.batch_mean.auc) << what;
  EXPECT_EQ(a.mrr, b.mrr) << what;
}

class TrainerDeterminismTest : public ::testing::TestWithParam<DetCase> {
 protected:
  void SetUp() override {
    stream_ = tiny_stream(23, 240, 24, 3);
    depbloom::data::check_event_stream(stream_);
    split_ = tiny_split(stream_, 160, 200);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->name()) + "_" + std::to_string(::getpid());
    for (char& ch : name)
      if (ch == '/') ch = '_';
    dir_ = fs::path(::testing::TempDir()) / ("depbloom_trainer_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<double> two_epoch_trace(uint64_t seed) {
    Trainer t(stream_, split_, config_for(GetParam(), seed));
    t.run_epoch(1);
    t.run_epoch(2);
    return t.loss_trace();
  }

  depbloom::data::EventStream stream_;
  depbloom::data::ChronoSplit split_;
  fs::path dir_;
};

TEST_P(TrainerDeterminismTest, SameSeedSameLossTraceBitForBit) {
  const std::vector<double> a = two_epoch_trace(5), b = two_epoch_trace(5);
  ASSERT_EQ(a.size(), 2u * 10u);  // 160 training events in batches of 16, two epochs
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(std::isfinite(a[i])) << "step " << i;
    EXPECT_EQ(a[i], b[i]) << "step " << i;  // bitwise: these are f32 losses widened
  }
}

TEST_P(TrainerDeterminismTest, AnotherSeedAnotherTrace) {
  EXPECT_NE(two_epoch_trace(5), two_epoch_trace(6));
}

TEST_P(TrainerDeterminismTest, ResumeFromCheckpointFileReplaysEpochTwo) {
  const DetCase& c = GetParam();
  const TrainerConfig cfg = config_for(c, 9);

  Trainer a(stream_, split_, cfg);
  const EpochResult a1 = a.run_epoch(1);
  const EpochResult a2 = a.run_epoch(2);
  const std::vector<double> trace_a = a.loss_trace();
  ASSERT_EQ(trace_a.size(), 2u * static_cast<size_t>(a1.batches));

  const std::string path = (dir_ / "epoch1.ckpt").string();
  {
    Trainer b(stream_, split_, cfg);
    const EpochResult b1 = b.run_epoch(1);
    EXPECT_EQ(b1.loss, a1.loss);
    expect_same_eval(b1.val, a1.val, "epoch 1 validation");
    depbloom::write_checkpoint(path, b.save(1, "cfg"));
  }
  const Checkpoint ckpt = depbloom::read_checkpoint(path);
  EXPECT_EQ(ckpt.epoch, 1);
  EXPECT_EQ(ckpt.config_text, "cfg");

  Trainer resumed(stream_, split_, cfg);
  resumed.load(ckpt);
  const EpochResult c2 = resumed.run_epoch(2);
  const std::vector<double> trace_a2(trace_a.begin() + a1.batches, trace_a.end());
  ASSERT_EQ(resumed.loss_trace().size(), trace_a2.size());
  for (size_t i = 0; i < trace_a2.size(); ++i)
    EXPECT_EQ(resumed.loss_trace()[i], trace_a2[i]) << "epoch-2 step " << i;
  EXPECT_EQ(c2.loss, a2.loss);
  EXPECT_EQ(c2.batches, a2.batches);
  ASSERT_TRUE(a2.val.valid);
  expect_same_eval(c2.val, a2.val, "epoch 2 validation");
  EXPECT_EQ(resumed.parameters().adam_steps(), a.parameters().adam_steps());

  // And the test pass from the state after validation.
  const auto ta = a.test();
  const auto tc = resumed.test();
  expect_same_eval(tc.first, ta.first, "test");
}

TEST_P(TrainerDeterminismTest, CheckpointOfAnotherModelIsADataError) {
  const DetCase& c = GetParam();
  const std::string path = (dir_ / "other.ckpt").string();
  {
    Trainer t(stream_, split_, config_for(c, 9));
    t.run_epoch(1);
    depbloom::write_checkpoint(path, t.save(1, "cfg"));
  }
  const Checkpoint ckpt = depbloom::read_checkpoint(path);

  // Wider memory and embedding: every parameter keeps its name but changes its shape.
  TrainerConfig wider = config_for(c, 9);
  wider.model.d_mem = 12;
  wider.model.d_emb = 12;
  // Another architecture: TGN <-> JODIE, so the parameter names differ.
  TrainerConfig other = config_for(c, 9);
  if (c.memory == MemoryKind::gru) {
    other.model.memory = MemoryKind::rnn;
    other.model.embedding = EmbeddingKind::jodie;
    other.deliver_to_neighbours = false;
  } else {
    other.model.memory = MemoryKind::gru;
    other.model.embedding = EmbeddingKind::attention;
    other.model.mailbox = 1;
    other.deliver_to_neighbours = false;
  }
  for (const TrainerConfig* cfg : {&wider, &other}) {
    Trainer t(stream_, split_, *cfg);
    try {
      t.load(ckpt);
      ADD_FAILURE() << "load() of another model's checkpoint did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
      EXPECT_NE(e.message().find(path), std::string::npos) << "names the file: " << e.what();
    }
  }
}

const DetCase kCases[] = {
    {"tgn_attention1", MemoryKind::gru, EmbeddingKind::attention, 1, 1, false, false},
    {"tgn_attention2_uniform", MemoryKind::gru, EmbeddingKind::attention, 2, 1, false, true},
    {"apan_mailbox3_delivery", MemoryKind::transformer, EmbeddingKind::identity, 1, 3, true, false},
};

INSTANTIATE_TEST_SUITE_P(Models, TrainerDeterminismTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<DetCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace dbtraintest
