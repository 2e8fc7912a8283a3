// Window plans of the shipped WIKI stream (TGN protocol split) for every method at P = 2,
// 4 and 8 with the global batch P x 600 and 8 steps a window: every plan valid and every
// window within the imbalance bound; at P = 4, metis cuts at most half the events hash
// cuts. Prints one line of statistics per plan, the numbers docs/strategies.md quotes.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <utility>

#include "depbloom/partition/window_plan.h"
#include "plan_checks.h"
#include "wiki_stream.h"

namespace depbloom::partition {
namespace {

constexpr int kRanks[] = {2, 4, 8};
constexpr int64_t kRankBatch = 600;
constexpr uint64_t kSeed = 0;

class WikiPlans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    wiki_ = std::make_unique<dbtest::WikiStream>(dbtest::load_wiki(0));
    for (PartitionMethod method : methods())
      for (int ranks : kRanks) plans_[{method, ranks}] = plan(method, ranks);
  }
  static void TearDownTestSuite() { wiki_.reset(), plans_.clear(); }

  static std::vector<PartitionMethod> methods() {
    std::vector<PartitionMethod> out = {PartitionMethod::fennel, PartitionMethod::hash};
    if (metis_available()) out.insert(out.begin(), PartitionMethod::metis);
    return out;
  }
  static WindowPlan plan(PartitionMethod method, int ranks) {
    PartitionConfig c;
    c.method = method;
    return make_window_plan(wiki_->stream, wiki_->split.train, ranks, ranks * kRankBatch, c, kSeed);
  }

  static std::unique_ptr<dbtest::WikiStream> wiki_;
  static std::map<std::pair<PartitionMethod, int>, WindowPlan> plans_;
};

std::unique_ptr<dbtest::WikiStream> WikiPlans::wiki_;
std::map<std::pair<PartitionMethod, int>, WindowPlan> WikiPlans::plans_;

TEST_F(WikiPlans, EveryWindowWithinTheImbalanceBound) {
  for (const auto& [key, plan] : plans_) {
    SCOPED_TRACE(testing::Message() << partition_method_name(key.first) << " P=" << key.second);
    dbpartitiontest::expect_valid_plan(plan, wiki_->stream, wiki_->split.train);
    for (const PlanWindow& w : plan.windows) EXPECT_LE(w.stats.imbalance, 1.05);
  }
}

// Hash puts node n in part n mod P: a window's cut events are those whose endpoints differ
// mod P, and every event runs in one of its endpoints' parts unless rebalancing moved it.
TEST_F(WikiPlans, HashPartsAreNodeIdModRanks) {
  const data::EventStream& s = wiki_->stream;
  for (int ranks : kRanks) {
    const WindowPlan& plan = plans_.at({PartitionMethod::hash, ranks});
    int64_t away = 0, events = 0;
    for (const PlanWindow& w : plan.windows) {
      int64_t cut = 0;
      for (size_t p = 0; p < w.parts.size(); ++p)
        for (int64_t row : w.parts[p].events) {
          const int32_t src_part = s.src[size_t(row)] % ranks,
                        dst_part = s.dst[size_t(row)] % ranks;
          cut += src_part != dst_part;
          away += src_part != int32_t(p) && dst_part != int32_t(p);
          ++events;
        }
      EXPECT_EQ(w.stats.cut_events, cut);
    }
    EXPECT_LE(away, events / 100) << "P=" << ranks << ": events away from both endpoints";
  }
}

TEST_F(WikiPlans, SameInputsSamePlan) {
  for (PartitionMethod method : methods()) {
    const WindowPlan again = plan(method, 4);
    const WindowPlan& first = plans_.at({method, 4});
    ASSERT_EQ(again.windows.size(), first.windows.size());
    for (size_t w = 0; w < first.windows.size(); ++w)
      for (size_t p = 0; p < 4; ++p)
        EXPECT_EQ(again.windows[w].parts[p].events, first.windows[w].parts[p].events);
  }
}

TEST_F(WikiPlans, MetisCutsAtMostHalfTheEventsHashCutsAtFourRanks) {
  for (const auto& [key, plan] : plans_) {
    const PlanTotals t = plan.totals();
    std::printf(
        "WIKI P=%d batch %lld %-6s: %zu windows, %lld steps, cut fraction %.3f (%lld of %lld "
        "events), max imbalance %.4f, migrated nodes %lld of %lld\n",
        key.second, static_cast<long long>(plan.batch_size), partition_method_name(key.first),
        plan.windows.size(), static_cast<long long>(t.steps), t.cut_fraction(),
        static_cast<long long>(t.cut_events), static_cast<long long>(t.events), t.max_imbalance,
        static_cast<long long>(t.migrated_nodes), static_cast<long long>(t.nodes));
  }
  if (!metis_available()) GTEST_SKIP() << "built without METIS";
  const int64_t metis = plans_.at({PartitionMethod::metis, 4}).totals().cut_events;
  const int64_t hash = plans_.at({PartitionMethod::hash, 4}).totals().cut_events;
  std::printf("WIKI P=4: metis cuts %.3f x the events hash cuts\n", double(metis) / double(hash));
  EXPECT_LE(2 * metis, hash);
}

}  // namespace
}  // namespace depbloom::partition
