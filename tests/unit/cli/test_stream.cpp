// depbloom-stream's engine (cli::StreamSession) against --eval-only's scores: the test split
// streamed with each event's positive and negatives as queries before it, at the evaluation
// batch size, gives the evaluator's logits bit for bit; queries that are not an event's
// group are scored in their own pass (the same values up to rounding); malformed, out-of-
// order and over-capacity lines are rejected with their line number and change nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "depbloom/cli/node_list.h"
#include "depbloom/cli/stream_session.h"
#include "depbloom/core/error.h"
#include "depbloom/graph/negative_sampler.h"
#include "trained_checkpoint.h"

namespace depbloom::cli {
namespace {
namespace fs = std::filesystem;

constexpr int32_t kNegatives = 3;
constexpr uint32_t kSplitTest = 2;  // the evaluator's key of the test split's negatives

uint32_t bits(float x) {
  uint32_t b = 0;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

// The first `rows` events of the shipped WIKI stream (which has no edge features) with `d`
// made-up feature columns after its label, as a JODIE file.
std::string with_features(const fs::path& out, int64_t rows, int d) {
  std::ifstream in(std::string(DEPBLOOM_SOURCE_DIR) + "/data/wikipedia/wikipedia_edges.csv");
  std::ofstream os(out);
  std::string line;
  std::getline(in, line);
  os << line << "\n";
  for (int64_t r = 0; r < rows && std::getline(in, line); ++r) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    os << line;
    for (int j = 0; j < d; ++j) os << "," << std::sin(0.37 * static_cast<double>(r) + j);
    os << "\n";
  }
  return out.string();
}

// Parameter: the stream's edge-feature columns.
class StreamScores : public TrainedCheckpoint<::testing::TestWithParam<int>> {
 protected:
  void SetUp() override {
    make_dir("depbloom-stream-");
    if (GetParam() > 0)
      cfg_.set_value("data.path", with_features(dir_ / "wiki.csv", 2000, GetParam()));
    cfg_.set_value("eval.negatives", int64_t{kNegatives});
    cfg_.set_value("eval.batch_size", int64_t{128});
    train_and_save();
    // The evaluator's test scores from the checkpoint, as --eval-only --scores dumps them.
    trainer_->load(read_checkpoint(ckpt_path_));
    trainer_->set_score_sink([&](const train::ScoredBatch& b) {
      if (b.new_nodes) return;
      for (int64_t r = 0; r < b.count; ++r) {
        std::vector<float> s{b.scores[r]};
        for (int32_t j = 0; j < b.k; ++j) s.push_back(b.scores[b.count + j * b.count + r]);
        expected_[b.events[r]] = s;
      }
    });
    trainer_->test();
    const train::TrainerConfig& tc = trainer_->config();
    negatives_ = graph::EvalNegativeSampler(stream_, split_.train, tc.eval_strategy,
                                            tc.eval_negatives, tc.seed)
                     .sample_split(kSplitTest, split_.test);
  }

  std::string id(int32_t v) const { return std::to_string(original_id(stream_, v)); }
  std::string event_line(int64_t e) const {
    const auto i = static_cast<size_t>(e);
    std::string line =
        fmt::format("{},{},{}", id(stream_.src[i]), id(stream_.dst[i]), stream_.ts[i]);
    for (int64_t j = 0; j < stream_.edge_dim; ++j)
      line += fmt::format(",{}", stream_.edge_feat[i * static_cast<size_t>(stream_.edge_dim) + j]);
    return line;
  }
  std::string query_line(int64_t e, int32_t dst) const {
    const auto i = static_cast<size_t>(e);
    return fmt::format("?,{},{},{}", id(stream_.src[i]), id(dst), stream_.ts[i]);
  }

  // Streams `lines` through a session at the evaluation batch size; answers by line.
  std::map<int64_t, float> run(const std::vector<std::string>& lines, StreamStats* stats) {
    StreamSession s(ckpt_path_, "", {"stream.batch_size=128"});
    std::map<int64_t, float> got;
    s.set_sink([&](const StreamAnswer& a) { got[a.line] = a.logit; });
    for (size_t i = 0; i < lines.size(); ++i)
      s.add_line(lines[i], static_cast<int64_t>(i) + 1, StreamClock::now());
    s.flush();
    if (stats != nullptr) *stats = s.stats();
    return got;
  }

  std::map<int64_t, std::vector<float>> expected_;  // test event -> positive, negatives
  std::vector<int32_t> negatives_;                  // [test, K]
};

TEST_P(StreamScores, GroupsBeforeEachEventGiveEvalOnlyScoresBitForBit) {
  std::vector<std::string> lines;
  std::vector<std::pair<int64_t, int32_t>> asked;  // (test event, 0 positive / j + 1)
  for (size_t n = 0; n < split_.test.size(); ++n) {
    const int64_t e = split_.test[n];
    lines.push_back(query_line(e, stream_.dst[static_cast<size_t>(e)]));
    asked.emplace_back(e, 0);
    for (int32_t j = 0; j < kNegatives; ++j) {
      lines.push_back(query_line(e, negatives_[n * kNegatives + static_cast<size_t>(j)]));
      asked.emplace_back(e, j + 1);
    }
    lines.push_back(event_line(e));
    asked.emplace_back(-1, 0);
  }
  StreamStats stats;
  const std::map<int64_t, float> got = run(lines, &stats);
  EXPECT_EQ(stream_.edge_dim, GetParam());
  ASSERT_EQ(expected_.size(), split_.test.size());
  EXPECT_EQ(stats.events, static_cast<int64_t>(split_.test.size()));
  EXPECT_EQ(stats.one_pass_batches, stats.batches);
  EXPECT_EQ(stats.new_nodes, 0);
  int64_t compared = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    if (asked[i].first < 0) continue;
    const auto line = static_cast<int64_t>(i) + 1;
    ASSERT_EQ(got.count(line), 1u) << "no answer for line " << line;
    const float want = expected_.at(asked[i].first)[static_cast<size_t>(asked[i].second)];
    EXPECT_EQ(bits(got.at(line)), bits(want))
        << "line " << line << ": " << got.at(line) << " vs " << want;
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int64_t>(split_.test.size()) * (1 + kNegatives));
}

// Positives asked after their event are no event's group: their own pass over the same state.
TEST_P(StreamScores, LooseQueriesGetTheSameScoresUpToRounding) {
  std::vector<std::string> lines;
  std::vector<int64_t> asked;
  for (int64_t e : split_.test) {
    lines.push_back(event_line(e));
    asked.push_back(-1);
    lines.push_back(query_line(e, stream_.dst[static_cast<size_t>(e)]));
    asked.push_back(e);
  }
  StreamStats stats;
  const std::map<int64_t, float> got = run(lines, &stats);
  EXPECT_EQ(stats.one_pass_batches, 0);
  // A query after event e is answered with the batch of the next event: e's batch unless
  // e is the last of its batch; only those queries are compared.
  int64_t compared = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    if (asked[i] < 0) continue;
    const auto n = static_cast<int64_t>(i / 2);
    if ((n + 1) % 128 == 0) continue;
    const float want = expected_.at(asked[i])[0];
    EXPECT_NEAR(got.at(static_cast<int64_t>(i) + 1), want, 1e-4f + 1e-4f * std::fabs(want));
    ++compared;
  }
  EXPECT_GT(compared, 100);
}

TEST_P(StreamScores, BadLinesAreRejectedWithTheirNumberAndChangeNothing) {
  const int64_t e = split_.test.front();
  const std::string good = event_line(e);
  const std::string q = query_line(e, stream_.dst[static_cast<size_t>(e)]);
  struct Case {
    std::string line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"1,2", "line 2: an event is"},
      {"x," + good.substr(good.find(',') + 1), "line 2: source 'x'"},
      {"?,1,2", "line 2: a query is"},
      {"?,1,2,nan", "line 2: time 'nan'"},
      {"?,1,2,0", "line 2: time 0 is older"},
      {"?,999999001,999999002,1e12", "line 2: a node id new to the stream"},
  };
  for (const Case& c : cases) {
    StreamSession s(ckpt_path_, "", {"stream.new_node_capacity=1"});
    std::vector<int64_t> answered;
    s.set_sink([&](const StreamAnswer& a) { answered.push_back(a.line); });
    s.add_line(q, 1, StreamClock::now());
    try {
      s.add_line(c.line, 2, StreamClock::now());
      ADD_FAILURE() << "accepted: " << c.line;
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), ErrorKind::data);
      EXPECT_NE(err.message().find(c.says), std::string::npos) << err.message();
    }
    s.add_line(good, 3, StreamClock::now());
    s.flush();
    EXPECT_EQ(answered, std::vector<int64_t>{1}) << c.line;
    EXPECT_EQ(s.stats().rejected, 1);
    EXPECT_EQ(s.stats().events, 1);
    EXPECT_EQ(s.stats().new_nodes, 0) << c.line;
  }
}

TEST_P(StreamScores, AWrittenCheckpointKeepsTheNewNodesRows) {
  const int64_t e = split_.test.front();
  const std::string good = event_line(e);
  size_t tail = 0;  // the line's edge features (after source, destination and time)
  for (int commas = 0; commas < 3 && tail != std::string::npos; ++commas)
    tail = good.find(',', tail == 0 ? 0 : tail + 1);
  const std::string features = tail == std::string::npos ? "" : good.substr(tail);
  const auto line = [&](int64_t src, int64_t dst) {
    return fmt::format("{},{},{}{}", src, dst, stream_.ts[static_cast<size_t>(e)], features);
  };
  const std::string after = (dir_ / "after.ckpt").string();
  {
    StreamSession s(ckpt_path_, "", {"stream.new_node_capacity=3"});
    s.add_line(line(999999001, 999999002), 1, StreamClock::now());
    s.flush();
    EXPECT_EQ(s.stats().new_nodes, 2);
    s.save_checkpoint(after);
  }
  StreamSession s(after, "", {"stream.new_node_capacity=3"});
  s.add_line(line(999999001, 999999002), 1, StreamClock::now());  // known: their rows
  EXPECT_EQ(s.stats().new_nodes, 0);
  s.add_line(line(999999001, 999999003), 2, StreamClock::now());  // the third, last spare row
  EXPECT_EQ(s.stats().new_nodes, 1);
  try {
    s.add_line(line(999999004, 999999002), 3, StreamClock::now());
    ADD_FAILURE() << "a fourth new node past a capacity of 3";
  } catch (const Error& err) {
    EXPECT_NE(err.message().find("line 3: a node id new to the stream"), std::string::npos)
        << err.message();
  }
  // A smaller capacity cannot hold the checkpoint's rows.
  EXPECT_THROW(StreamSession(after, "", {"stream.new_node_capacity=1"}), Error);
}

INSTANTIATE_TEST_SUITE_P(EdgeFeatures, StreamScores, ::testing::Values(0, 4));

TEST(StreamLatency, QuantilesWithinOnePercentAboveTheirRank) {
  LatencyHistogram h;
  EXPECT_EQ(h.quantile(0.5), 0.0);
  for (double ms : {5.0, 1.0, 4.0, 2.0, 3.0}) h.add(ms * 1e-3);
  h.add(0.0);  // below the first edge: the first bucket
  EXPECT_EQ(h.count(), 6);
  const struct {
    double q, at_least;
  } cases[] = {{0.5, 2e-3}, {0.99, 5e-3}, {1.0, 5e-3}, {0.1, 0.0}};
  for (const auto& c : cases) {
    EXPECT_GE(h.quantile(c.q), c.at_least) << c.q;
    EXPECT_LE(h.quantile(c.q), std::max(c.at_least * 1.01, 1e-6)) << c.q;
  }
  h.add(1e9);  // beyond the last edge: the last bucket
  EXPECT_GT(h.quantile(1.0), 1e4);
}

}  // namespace
}  // namespace depbloom::cli
