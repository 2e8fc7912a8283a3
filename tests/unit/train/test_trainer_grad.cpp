// Finite-difference check of one whole training step of every model (TGN with one and two
// attention layers, JODIE, APAN with a 3-mail ring and neighbour delivery, TGAT) in
// float64 on the CPU: two train_step calls fill the memory and the mailboxes, then the
// gradient of the next batch's loss (Trainer::step_loss with gradients) must match central
// differences of the same loss in every parameter. A second check makes sure the parts
// that should learn get a non-zero gradient, so the comparison cannot pass vacuously.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"
#include "depbloom/model/tgnn.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace dbtraintest {
namespace {

using depbloom::Device;
using depbloom::DType;
using depbloom::model::AttentionStyle;
using depbloom::model::EmbeddingKind;
using depbloom::model::MemoryKind;
using depbloom::model::NeighbourReads;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

// Central differences with h = 1e-6 on an O(1) loss carry ~1e-10 of rounding error and
// O(h^2) truncation error, so |num - ana| <= 1e-6 + 1e-4 |num| only fails on a wrong
// gradient (or a step that crosses a kink, which the tiny random model does not hit).
constexpr double kStep = 1e-6;
constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-4;
// A gradient entry counts as non-zero above this (the gradients here are O(1e-3..1)).
constexpr double kNonZero = 1e-12;

struct GradCase {
  const char* name;
  MemoryKind memory;
  EmbeddingKind embedding;
  int layers;
  int mailbox;
  bool deliver_to_neighbours;
  // Parameter-name prefixes of which every parameter must get some non-zero gradient.
  std::vector<std::string> learning;
  AttentionStyle style = AttentionStyle::tgl;
  // The first layer's neighbour reads: automatic picks by the batch's sizes, so each of
  // the two paths also gets cases of its own.
  NeighbourReads reads = NeighbourReads::automatic;
};

void PrintTo(const GradCase& c, std::ostream* os) {
  *os << c.name;
}

TrainerConfig config_for(const GradCase& c) {
  TrainerConfig cfg;
  cfg.model.memory = c.memory;
  cfg.model.embedding = c.embedding;
  cfg.model.layers = c.layers;
  cfg.model.mailbox = c.mailbox;
  cfg.model.d_mem = 4;
  cfg.model.d_mem_time = 3;
  cfg.model.d_emb = 4;
  cfg.model.attention_style = c.style;
  cfg.model.neighbour_reads = c.reads;
  // The TGN authors' attention is d_in + d_gnn_time wide: 8 splits into 2 heads.
  cfg.model.d_gnn_time = c.style == AttentionStyle::tgn ? 4 : 3;
  cfg.model.heads = 2;
  cfg.model.memory_heads = 2;
  cfg.model.neighbours = 3;
  cfg.model.dropout = 0.0;
  cfg.deliver_to_neighbours = c.deliver_to_neighbours;
  cfg.batch_size = 8;
  cfg.eval_batch_size = 8;
  // The warm-up steps move the weights a little away from their init. (At 1e-2 one Adam
  // step kills every ReLU unit of TGAT's 4-wide predictor: a legitimately zero gradient.)
  cfg.lr = 1e-3;
  cfg.seed = 3;
  cfg.device = Device::cpu();
  cfg.dtype = DType::f64;
  return cfg;
}

class TrainerGradTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(TrainerGradTest, WholeStepMatchesCentralDifferences) {
  const GradCase& c = GetParam();
  const depbloom::data::EventStream stream = tiny_stream();
  depbloom::data::check_event_stream(stream);
  const depbloom::data::ChronoSplit split = tiny_split(stream);
  const TrainerConfig cfg = config_for(c);
  Trainer trainer(stream, split, cfg);
  const int64_t b = cfg.batch_size;
  const int64_t* train = split.train.data();

  // Two steps so the memory, the last-update times and the mail rings are non-zero.
  trainer.train_step(depbloom::train::contiguous_part(train, b, 0, 1), 1);
  trainer.train_step(depbloom::train::contiguous_part(train + b, b, 0, 1), 1);
  {
    const auto& mem = trainer.state().memory();
    const double* m = mem.data<double>();
    double norm = 0;
    for (int64_t i = 0; i < mem.numel(); ++i) norm += std::fabs(m[i]);
    if (c.memory != MemoryKind::none) {
      ASSERT_GT(norm, 0.0) << "the memory is still zero";
    }
  }

  const int64_t* batch = train + 2 * b;
  const double loss = trainer.step_loss(batch, b, 1, true);
  ASSERT_TRUE(std::isfinite(loss));
  auto& store = trainer.parameters();
  ASSERT_EQ(store.dtype(), DType::f64);
  const int64_t n = store.numel();
  const std::vector<double> analytic(store.grads().data<double>(),
                                     store.grads().data<double>() + n);
  double* x = store.values().data<double>();
  // The loss without gradients equals the one with them (the same forward).
  EXPECT_EQ(trainer.step_loss(batch, b, 1, false), loss);

  int64_t checked = 0;
  double worst = 0;  // the largest |num - ana| / (atol + rtol |num|): the margin, for the log
  for (const auto& e : store.entries()) {
    int failures = 0;
    for (int64_t i = e.offset; i < e.offset + e.shape.numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + kStep;
      const double up = trainer.step_loss(batch, b, 1, false);
      x[i] = saved - kStep;
      const double down = trainer.step_loss(batch, b, 1, false);
      x[i] = saved;
      const double numeric = (up - down) / (2.0 * kStep);
      const double a = analytic[static_cast<size_t>(i)];
      ++checked;
      worst = std::max(worst, std::fabs(numeric - a) / (kAtol + kRtol * std::fabs(numeric)));
      if (std::fabs(numeric - a) <= kAtol + kRtol * std::fabs(numeric)) continue;
      if (++failures <= 5)
        ADD_FAILURE() << c.name << ": " << e.name << "[" << (i - e.offset) << "]: analytic " << a
                      << ", numeric " << numeric;
    }
    EXPECT_EQ(failures, 0) << c.name << ": " << e.name << " has " << failures
                           << " wrong gradient entries";
  }
  EXPECT_EQ(checked, n);  // every parameter, not a sample
  RecordProperty("parameters_checked", static_cast<int>(checked));
  RecordProperty("worst_error_over_tolerance", std::to_string(worst));

  // Non-vacuous: every parameter of the parts that should learn has a non-zero gradient.
  std::map<std::string, int> matched;
  for (const auto& e : store.entries()) {
    for (const auto& prefix : c.learning) {
      if (e.name.rfind(prefix, 0) != 0) continue;
      ++matched[prefix];
      // Under plain dot-product scores (tgn style) a key bias shifts every score of a root
      // alike, so softmax cancels it: its gradient is zero in exact arithmetic.
      const bool key_bias = e.name.size() >= 4 && e.name.compare(e.name.size() - 4, 4, ".b_k") == 0;
      if (c.style == AttentionStyle::tgn && key_bias) continue;
      double most = 0;
      for (int64_t i = e.offset; i < e.offset + e.shape.numel(); ++i)
        most = std::max(most, std::fabs(analytic[static_cast<size_t>(i)]));
      EXPECT_GT(most, kNonZero) << c.name << ": " << e.name << " gets no gradient";
    }
  }
  for (const auto& prefix : c.learning)
    EXPECT_GT(matched[prefix], 0) << c.name << ": no parameter named " << prefix << "*";
}

const GradCase kCases[] = {
    {"tgn_attention1",
     MemoryKind::gru,
     EmbeddingKind::attention,
     1,
     1,
     false,
     {"memory_updater.", "layer0.", "edge_predictor."}},
    {"tgn_attention2",
     MemoryKind::gru,
     EmbeddingKind::attention,
     2,
     1,
     false,
     {"memory_updater.", "layer0.", "layer1.", "edge_predictor."}},
    {"tgn_authors_attention2",
     MemoryKind::gru,
     EmbeddingKind::attention,
     2,
     1,
     false,
     {"memory_updater.", "layer0.", "layer1.", "edge_predictor."},
     AttentionStyle::tgn},
    {"tgn_attention1_slot_reads",
     MemoryKind::gru,
     EmbeddingKind::attention,
     1,
     1,
     false,
     {"memory_updater.", "layer0.", "edge_predictor."},
     AttentionStyle::tgn,
     NeighbourReads::slots},
    {"tgn_attention2_slot_reads",
     MemoryKind::gru,
     EmbeddingKind::attention,
     2,
     1,
     false,
     {"memory_updater.", "layer0.", "layer1.", "edge_predictor."},
     AttentionStyle::tgn,
     NeighbourReads::slots},
    {"tgn_attention2_table_reads",
     MemoryKind::gru,
     EmbeddingKind::attention,
     2,
     1,
     false,
     {"memory_updater.", "layer0.", "layer1.", "edge_predictor."},
     AttentionStyle::tgl,
     NeighbourReads::table},
    {"jodie",
     MemoryKind::rnn,
     EmbeddingKind::jodie,
     1,
     1,
     false,
     {"memory_updater.", "time_projection.", "edge_predictor."}},
    {"apan_mailbox3_delivery",
     MemoryKind::transformer,
     EmbeddingKind::identity,
     1,
     3,
     true,
     {"memory_updater.", "edge_predictor."}},
    {"tgat_attention2",
     MemoryKind::none,
     EmbeddingKind::attention,
     2,
     1,
     false,
     {"layer0.", "layer1.", "edge_predictor."}},
};

INSTANTIATE_TEST_SUITE_P(Models, TrainerGradTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace dbtraintest
