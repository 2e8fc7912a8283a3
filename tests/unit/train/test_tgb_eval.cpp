// TGB's evaluation on a fixture made here: 300 events whose node ids are not dense, TGB's
// split, fixed negatives written as tools/tgb_negatives.py writes them, and the one-vs-many
// MRR of given scores computed by hand with TGB's rank against the tgb strategy's output.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/npy.h"
#include "depbloom/data/split.h"
#include "depbloom/data/tgb.h"
#include "depbloom/graph/negative_sampler.h"
#include "depbloom/train/metrics.h"

namespace depbloom {
namespace {

namespace fs = std::filesystem;
using data::NpyDtype;

constexpr int kEvents = 300;
constexpr int kNegatives = 4;

// Event i: 10 * (i % 17) -> 10 * (20 + i % 13) at 100 + 3 i (one id space, ids not dense).
int64_t src_of(int i) {
  return 10 * (i % 17);
}
int64_t dst_of(int i) {
  return 10 * (20 + i % 13);
}
double ts_of(int i) {
  return 100.0 + 3.0 * i;
}
// The negatives of event i, in TGB's (the file's) ids: other destinations and a source.
int64_t negative_of(int i, int j) {
  return j == 3 ? src_of(i + 1) : dst_of(i + 1 + j);
}

struct Fixture {
  data::EventStream stream;
  data::ChronoSplit split;
  std::string dir;
};

void write_split(const std::string& dir, const std::string& split, const std::vector<int>& rows) {
  std::vector<int64_t> src, dst, neg;
  std::vector<double> ts;
  for (int i : rows) {
    src.push_back(src_of(i)), dst.push_back(dst_of(i)), ts.push_back(ts_of(i));
    for (int j = 0; j < kNegatives; ++j) neg.push_back(negative_of(i, j));
  }
  const auto n = static_cast<int64_t>(rows.size());
  data::write_npy(dir + "/" + split + "_src.npy", NpyDtype::i8, {n}, src.data());
  data::write_npy(dir + "/" + split + "_dst.npy", NpyDtype::i8, {n}, dst.data());
  data::write_npy(dir + "/" + split + "_ts.npy", NpyDtype::f8, {n}, ts.data());
  data::write_npy(dir + "/" + split + "_neg.npy", NpyDtype::i8, {n, kNegatives}, neg.data());
}

Fixture make_fixture(const std::string& name) {
  std::string text;
  for (int i = 0; i < kEvents; ++i)
    text += fmt::format("{} {} {}\n", src_of(i), dst_of(i), ts_of(i));
  Fixture f;
  f.stream = data::parse_event_text(text, "snap", name, {});
  data::SplitSpec spec;
  spec.protocol = data::SplitProtocol::tgb;
  f.split = data::make_split(f.stream, spec);
  f.dir = (fs::temp_directory_path() / ("depbloom-tgb-" + name)).string();
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  std::vector<int> val(f.split.val.begin(), f.split.val.end());
  std::vector<int> test(f.split.test.begin(), f.split.test.end());
  write_split(f.dir, "val", val);  // event index = file row: the times ascend
  write_split(f.dir, "test", test);
  return f;
}

int32_t dense(const data::EventStream& s, int64_t original) {
  for (int32_t v = 0; v < s.num_nodes; ++v)
    if (s.original_id[static_cast<size_t>(v)] == original) return v;
  ADD_FAILURE() << "no node " << original;
  return -1;
}

TEST(TgbEval, SplitIsTgbsQuantileSplitWithoutHeldOutNodes) {
  const Fixture f = make_fixture("split");
  // np.quantile(ts, [0.70, 0.85]) of 100, 103, ..., 997: 727.9 and 862.45 by hand.
  EXPECT_DOUBLE_EQ(f.split.val_time, 100.0 + 3.0 * 299 * 0.70);
  EXPECT_DOUBLE_EQ(f.split.test_time, 100.0 + 3.0 * 299 * 0.85);
  EXPECT_EQ(f.split.train.size(), 210u);  // ts <= 727.9: events 0..209
  EXPECT_EQ(f.split.val.size(), 45u);     // 727.9 < ts <= 862.45: events 210..254
  EXPECT_EQ(f.split.test.size(), 45u);
  EXPECT_TRUE(f.split.held_out_nodes.empty());
  EXPECT_TRUE(f.split.new_node_test.empty());
  fs::remove_all(f.dir);
}

TEST(TgbEval, MrrOfTheFixedNegativesIsTheHandComputedOne) {
  Fixture f = make_fixture("mrr");
  data::attach_tgb_negatives(f.stream, f.dir, false);
  ASSERT_EQ(f.stream.fixed_k, kNegatives);
  const graph::EvalNegativeSampler sampler(f.stream, f.split.train,
                                           graph::EvalNegativeStrategy::tgb, kNegatives, 7);
  const std::vector<int32_t> negs = sampler.sample_split(2, f.split.test);
  // A score per node from its file id, so ties and orders are known: score(id) = id % 70.
  auto score = [](int64_t id) { return static_cast<float>(id % 70); };
  std::vector<float> pos, neg;
  double by_hand = 0;
  for (size_t q = 0; q < f.split.test.size(); ++q) {
    const int i = static_cast<int>(f.split.test[q]);
    pos.push_back(score(dst_of(i)));
    double greater = 0, equal = 0;
    for (int j = 0; j < kNegatives; ++j) {
      const int32_t got = negs[q * kNegatives + j];
      EXPECT_EQ(got, dense(f.stream, negative_of(i, j))) << "query " << q << " negative " << j;
      neg.push_back(score(f.stream.original_id[static_cast<size_t>(got)]));
      greater += score(negative_of(i, j)) > score(dst_of(i));
      equal += score(negative_of(i, j)) == score(dst_of(i));
    }
    // TGB's rank: the mean of the optimistic (1 + greater) and pessimistic (1 + greater +
    // equal) ranks.
    by_hand += 1.0 / (0.5 * ((1 + greater) + (1 + greater + equal)));
  }
  by_hand /= static_cast<double>(f.split.test.size());
  EXPECT_DOUBLE_EQ(mean_reciprocal_rank(pos.data(), neg.data(), pos.size(), kNegatives), by_hand);
  EXPECT_GT(by_hand, 0.0);
  EXPECT_LT(by_hand, 1.0);
  fs::remove_all(f.dir);
}

TEST(TgbEval, BadNegativesAreNamedErrors) {
  Fixture f = make_fixture("bad");
  data::attach_tgb_negatives(f.stream, f.dir, false);
  // eval.negatives must be TGB's K.
  try {
    graph::EvalNegativeSampler(f.stream, f.split.train, graph::EvalNegativeStrategy::tgb, 3, 0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(e.message().find("set eval.negatives: 4"), std::string::npos) << e.message();
  }
  // A training event has no fixed negatives.
  const graph::EvalNegativeSampler sampler(f.stream, f.split.train,
                                           graph::EvalNegativeStrategy::tgb, kNegatives, 0);
  EXPECT_THROW(sampler.sample_split(1, {0}), Error);
  // A query whose event is not in the stream, and a negative that is no node.
  std::vector<int64_t> src{src_of(0)}, dst{dst_of(0)}, neg{999, 999, 999, 999};
  std::vector<double> ts{1.5};
  data::write_npy(f.dir + "/val_ts.npy", NpyDtype::f8, {1}, ts.data());
  data::write_npy(f.dir + "/val_src.npy", NpyDtype::i8, {1}, src.data());
  data::write_npy(f.dir + "/val_dst.npy", NpyDtype::i8, {1}, dst.data());
  data::write_npy(f.dir + "/val_neg.npy", NpyDtype::i8, {1, kNegatives}, neg.data());
  try {
    data::attach_tgb_negatives(f.stream, f.dir, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("val_neg.npy: row 0: no event (0, 200, t 1.5)"), std::string::npos)
        << e.message();
  }
  ts[0] = ts_of(0);
  data::write_npy(f.dir + "/val_ts.npy", NpyDtype::f8, {1}, ts.data());
  try {
    data::attach_tgb_negatives(f.stream, f.dir, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("row 0: node 999 is not in the stream"), std::string::npos)
        << e.message();
  }
  fs::remove_all(f.dir);
}

}  // namespace
}  // namespace depbloom
