// Node classification (train/node_classifier.h): ROC-AUC against a plain average-rank loop,
// the classification splits, the frozen embedding pass, and the decoder learning hand-made
// separable labels (and not scoring them before it is trained).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/train/metrics.h"
#include "depbloom/train/node_classifier.h"
#include "unit/train/tiny_stream.h"

namespace {

using depbloom::train::ClassifyRows;
using depbloom::train::ClassifySettings;
using depbloom::train::EmbeddingTable;
using depbloom::train::LabelledRows;

// The Mann-Whitney form with average ranks, one score at a time: AUC = (sum of the
// positives' ranks - P(P+1)/2) / (P N), a tie group sharing the mean of its ranks.
double average_rank_auc(const std::vector<float>& s, const std::vector<uint8_t>& y) {
  double rank_sum = 0, pos = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (y[i] == 0) continue;
    double below = 0, tied = 0;
    for (size_t j = 0; j < s.size(); ++j) {
      below += s[j] < s[i] ? 1 : 0;
      tied += s[j] == s[i] ? 1 : 0;
    }
    rank_sum += below + (tied + 1) / 2;  // ranks below+1 .. below+tied, averaged
    pos += 1;
  }
  const double neg = static_cast<double>(s.size()) - pos;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

TEST(NodeClassifierAuc, MatchesAverageRanksWithTies) {
  std::mt19937 gen(3);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = 2 + gen() % 60;
    std::vector<float> s(n);
    std::vector<uint8_t> y(n);
    for (size_t i = 0; i < n; ++i) {
      s[i] = static_cast<float>(gen() % 7);  // few distinct values: many ties
      y[i] = gen() % 4 == 0 ? 1 : 0;
    }
    y[0] = 1, y[1] = 0;
    EXPECT_NEAR(depbloom::roc_auc(s.data(), y.data(), n), average_rank_auc(s, y), 1e-12)
        << "trial " << trial;
  }
}

// n rows of `dim` uniform(-1, 1) coordinates; label = coordinate 1 above `threshold`. Rows
// [0, 60%) train, [60%, 80%) val, the rest test.
struct Separable {
  EmbeddingTable emb;
  ClassifyRows rows;
};

Separable separable(int64_t n, int64_t dim, float threshold, uint32_t seed) {
  Separable d;
  d.emb.dim = dim;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < n * dim; ++i) d.emb.values.push_back(u(gen));
  for (int64_t i = 0; i < n; ++i) {
    LabelledRows& into = i < n * 6 / 10 ? d.rows.train : i < n * 8 / 10 ? d.rows.val : d.rows.test;
    into.row.push_back(i);
    into.label.push_back(d.emb.row(i)[1] > threshold ? 1 : 0);
  }
  return d;
}

struct SeparableCase {
  const char* name;
  float threshold;  // 0: balanced; 0.8: about 10% positives
  double dropout = 0;
};

class DecoderLearns : public ::testing::TestWithParam<SeparableCase> {};

TEST_P(DecoderLearns, TrainedAucIsHighAndUntrainedIsNot) {
  const Separable d = separable(3000, 6, GetParam().threshold, 5);
  ClassifySettings s;
  s.epochs = 15;
  s.lr = 1e-2;
  s.hidden = {16, 8};
  s.batch_size = 50;
  s.patience = 0;
  s.seed = 1;
  s.dropout = GetParam().dropout;
  depbloom::train::MlpDecoder fresh(d.emb.dim, s.hidden, s.seed);
  const std::vector<float> before = depbloom::train::decoder_scores(fresh, d.emb, d.rows.test);
  const double untrained =
      depbloom::roc_auc(before.data(), d.rows.test.label.data(), before.size());
  std::vector<double> val_aucs;
  const depbloom::train::ClassifyResult r = depbloom::train::train_classifier(
      d.emb, d.rows, s,
      [&](const depbloom::train::ClassifyEpoch& e) { val_aucs.push_back(e.val_auc); });
  EXPECT_LT(untrained, 0.9);
  EXPECT_GT(r.test_auc, 0.95);
  EXPECT_GT(r.best_val_auc, 0.95);
  ASSERT_EQ(val_aucs.size(), 15u);
  ASSERT_EQ(r.epochs.size(), 15u);
  EXPECT_LT(r.epochs.back().loss, r.epochs.front().loss);
  // The best epoch is the one with the highest validation AUC.
  EXPECT_EQ(r.best_val_auc, *std::max_element(val_aucs.begin(), val_aucs.end()));
  EXPECT_EQ(r.best_val_auc, val_aucs[static_cast<size_t>(r.best_epoch - 1)]);
}

INSTANTIATE_TEST_SUITE_P(Labels, DecoderLearns,
                         ::testing::Values(SeparableCase{"balanced", 0.0f},
                                           SeparableCase{"imbalanced", 0.8f},
                                           SeparableCase{"dropout", 0.0f, 0.1}),
                         [](const auto& info) { return std::string(info.param.name); });

// A row's dropout mask follows its id and the epoch, not the batch it is in; without
// dropout, training's forward is scoring's.
TEST(NodeClassifier, DropoutFollowsTheRowNotTheBatch) {
  const Separable d = separable(10, 6, 0.0f, 4);
  const depbloom::Tensor x =
      depbloom::Tensor::wrap(const_cast<float*>(d.emb.values.data()), depbloom::Shape(10, 6));
  std::vector<int64_t> ids(10);
  std::iota(ids.begin(), ids.end(), 100);
  const auto logits_of = [&](double p, int64_t epoch, int64_t split) {
    depbloom::train::MlpDecoder decoder(6, {32}, 7, p);
    std::vector<float> out(10);
    depbloom::Arena arena;
    for (int64_t b = 0; b < 10; b += split) {
      arena.reset();
      const depbloom::model::DropoutDraw draw{true,
                                              depbloom::RngKey{7, 10, static_cast<uint32_t>(epoch)},
                                              depbloom::ops::DropoutRows(depbloom::Tensor::wrap(
                                                  ids.data() + b, depbloom::Shape(split)))};
      decoder.forward(depbloom::Tensor::wrap(out.data() + b, depbloom::Shape(split)),
                      x.rows(b, b + split), arena, draw);
    }
    return out;
  };
  EXPECT_EQ(logits_of(0.5, 1, 10), logits_of(0.5, 1, 5));
  EXPECT_NE(logits_of(0.5, 1, 10), logits_of(0.5, 2, 10));
  EXPECT_NE(logits_of(0.5, 1, 10), logits_of(0.0, 1, 10));
  depbloom::train::MlpDecoder plain(6, {32}, 7);
  std::vector<float> scored(10);
  depbloom::Arena arena;
  plain.forward(depbloom::Tensor::wrap(scored.data(), depbloom::Shape(10)), x, arena);
  EXPECT_EQ(logits_of(0.0, 1, 10), scored);
}

TEST(NodeClassifier, PatienceStopsEarly) {
  const Separable d = separable(600, 4, 0.0f, 8);
  ClassifySettings s;
  s.epochs = 50;
  s.lr = 0;  // nothing improves after the first epoch
  s.hidden = {4};
  s.patience = 3;
  const depbloom::train::ClassifyResult r = depbloom::train::train_classifier(d.emb, d.rows, s);
  EXPECT_EQ(r.best_epoch, 1);
  EXPECT_EQ(r.epochs.size(), 4u);
}

TEST(NodeClassifier, RowsFollowTheSplitAndSkipUnlabelled) {
  const depbloom::data::EventStream stream = dbtraintest::tiny_stream();
  depbloom::data::ChronoSplit split = dbtraintest::tiny_split(stream);
  split.train.erase(split.train.begin() + 5);  // a held-out node's event: still classified
  std::vector<int8_t> labels(60, 0);
  for (int64_t e : {2, 30, 45, 55}) labels[static_cast<size_t>(e)] = 1;
  labels[7] = -1;
  labels[51] = -1;
  const ClassifyRows r = depbloom::train::classify_rows(split, labels, "labels.txt");
  EXPECT_EQ(r.train.size(), 39);  // [0, 40) without event 7
  EXPECT_EQ(r.val.size(), 10);
  EXPECT_EQ(r.test.size(), 9);
  EXPECT_EQ(r.train.positives(), 2);
  EXPECT_EQ(r.train.row[5], 5);
  EXPECT_EQ(r.test.row[1], 52);
  labels[45] = 0;  // validation left without a positive
  try {
    depbloom::train::classify_rows(split, labels, "labels.txt");
    FAIL() << "no error";
  } catch (const depbloom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("labels.txt: the validation split"), std::string::npos)
        << e.what();
  }
}

TEST(NodeClassifier, EmbeddingPassIsFrozenAndReplaysFromAResetState) {
  const depbloom::data::EventStream stream = dbtraintest::tiny_stream();
  const depbloom::data::ChronoSplit split = dbtraintest::tiny_split(stream);
  depbloom::train::TrainerConfig cfg;
  cfg.model.d_mem = 8, cfg.model.d_mem_time = 4, cfg.model.d_emb = 8, cfg.model.d_gnn_time = 4;
  cfg.model.heads = 2, cfg.model.neighbours = 4;
  cfg.batch_size = cfg.eval_batch_size = 16;
  cfg.lr = 1e-2;
  depbloom::train::Trainer trainer(stream, split, cfg);
  trainer.run_epoch(1);
  const depbloom::Tensor v = trainer.parameters().values();
  const std::vector<float> params(v.data<float>(), v.data<float>() + v.numel());
  const EmbeddingTable a = depbloom::train::source_embeddings(trainer, 16);
  ASSERT_EQ(a.rows(), 60);
  ASSERT_EQ(a.dim, cfg.model.d_out());
  EXPECT_EQ(std::vector<float>(v.data<float>(), v.data<float>() + v.numel()), params);
  // Again from the reset state: the same rows; the memory differs by the end, so do rows.
  const EmbeddingTable b = depbloom::train::source_embeddings(trainer, 16);
  EXPECT_EQ(a.values, b.values);
  EXPECT_NE(std::vector<float>(a.row(0), a.row(1)), std::vector<float>(a.row(59), a.row(60)));
  // The first batch of a pass over only the first 16 events is the same batch.
  std::vector<int64_t> first(16);
  std::iota(first.begin(), first.end(), 0);
  std::vector<float> head;
  trainer.replay(first, 16, [&](int64_t, int64_t count, const depbloom::train::StepData& d) {
    const depbloom::Tensor src = d.emb.rows(0, count);
    head.assign(src.data<float>(), src.data<float>() + src.numel());
  });
  EXPECT_EQ(head, std::vector<float>(a.row(0), a.row(16)));
}

}  // namespace
