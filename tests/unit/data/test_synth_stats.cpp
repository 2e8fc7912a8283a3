// The synthetic generator at small scale: its streams are well formed, have the published
// shapes within the stated 10% (counts exactly), and are a pure function of the seed,
// whatever the thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <set>

#include "depbloom/core/error.h"
#include "depbloom/data/stream_stats.h"
#include "depbloom/data/synth.h"

namespace depbloom::data {
namespace {

void expect_within_10pct(double measured, double target, const char* what) {
  EXPECT_LE(std::abs(measured - target), 0.10 * std::abs(target))
      << what << ": measured " << measured << ", target " << target;
}

void expect_well_formed(const EventStream& s) {
  ASSERT_EQ(s.dst.size(), s.src.size());
  ASSERT_EQ(s.ts.size(), s.src.size());
  ASSERT_EQ(s.event_id.size(), s.src.size());
  ASSERT_EQ(static_cast<int64_t>(s.original_id.size()), s.num_nodes);
  for (int64_t e = 0; e < s.num_events(); ++e) {
    ASSERT_EQ(s.event_id[e], e);
    ASSERT_GE(s.src[e], 0);
    ASSERT_LT(s.dst[e], s.num_nodes);
    if (s.bipartite) {
      ASSERT_LT(s.src[e], s.num_users);
      ASSERT_GE(s.dst[e], s.num_users);
    } else {
      ASSERT_NE(s.src[e], s.dst[e]);  // the generator makes no self-loops
    }
    if (e > 0) {
      ASSERT_LE(s.ts[e - 1], s.ts[e]);
    }
    ASSERT_EQ(s.ts[e], std::floor(s.ts[e]));
  }
}

TEST(Synth, WikiShapeAtScaleOneTenth) {
  SynthSpec spec;
  spec.shape = SynthShape::wiki;
  spec.scale = 0.1;
  spec.seed = 5;
  const EventStream s = synthesize(spec);
  expect_well_formed(s);
  const SynthTargets t = synth_targets(spec.shape, spec.scale);
  EXPECT_EQ(t.num_users, 823);
  EXPECT_EQ(t.num_items, 100);
  EXPECT_EQ(t.num_events, 15747);
  const StreamStats st = compute_stream_stats(s);
  EXPECT_TRUE(st.bipartite);
  EXPECT_EQ(st.num_users, t.num_users);
  EXPECT_EQ(st.num_items, t.num_items);
  EXPECT_EQ(st.active_nodes, t.num_nodes);
  EXPECT_EQ(st.num_events, t.num_events);
  expect_within_10pct(st.span_days, 31.0, "span");
  expect_within_10pct(st.repeat_fraction, 0.88, "repeat fraction");
  expect_within_10pct(st.repeat_last1_share, 0.90, "last-partner share");
  expect_within_10pct(st.repeat_last5_share, 0.98, "last-5 share");
  EXPECT_EQ(st.activity.p50, 2);
  expect_within_10pct(st.activity_one_share, 0.37, "one-event users");
  expect_within_10pct(st.activity_top1pct_share, 0.25, "top-1% share");
  expect_within_10pct(static_cast<double>(st.popularity.min), 90.0, "least item");
}

TEST(Synth, RedditShapeAtScaleOneTwentieth) {
  SynthSpec spec;
  spec.shape = SynthShape::reddit;
  spec.scale = 0.05;
  const EventStream s = synthesize(spec);
  expect_well_formed(s);
  const StreamStats st = compute_stream_stats(s);
  EXPECT_EQ(st.num_users, 500);
  EXPECT_EQ(st.num_items, 49);
  EXPECT_EQ(st.active_nodes, 549);
  EXPECT_EQ(st.num_events, 33622);
  expect_within_10pct(st.repeat_fraction, 0.88, "repeat fraction");
  expect_within_10pct(st.span_days, 31.0, "span");
}

TEST(Synth, WikiTalkShapeAtScaleOneHundredth) {
  SynthSpec spec;
  spec.shape = SynthShape::wikitalk;
  spec.scale = 0.01;
  spec.seed = 2;
  const EventStream s = synthesize(spec);
  expect_well_formed(s);
  const StreamStats st = compute_stream_stats(s);
  EXPECT_FALSE(st.bipartite);
  EXPECT_EQ(st.active_nodes, 11401);
  EXPECT_EQ(st.num_events, 78331);
  EXPECT_EQ(st.self_loops, 0);
  expect_within_10pct(st.span_days, 2320.0, "span");
  expect_within_10pct(st.repeat_fraction, 0.58, "repeat fraction");
  expect_within_10pct(st.degree_power_law.alpha, 2.8, "degree exponent");
}

TEST(Synth, SameSeedSameStreamWhateverTheThreads) {
  SynthSpec spec;
  spec.shape = SynthShape::wikitalk;
  spec.scale = 0.002;
  spec.seed = 42;
  spec.edge_features = 3;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const EventStream a = synthesize(spec);
  omp_set_num_threads(std::max(2, threads));
  const EventStream b = synthesize(spec);
  omp_set_num_threads(threads);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.ts, b.ts);
  EXPECT_EQ(a.edge_feat, b.edge_feat);

  spec.seed = 43;
  const EventStream c = synthesize(spec);
  EXPECT_NE(a.dst, c.dst);
  EXPECT_NE(a.edge_feat, c.edge_feat);
}

// Features of events of one pair share the pair's latent part: their correlation is about
// 0.64, and about 0 across unrelated events.
TEST(Synth, FeaturesRepeatWithThePair) {
  SynthSpec spec;
  spec.scale = 0.05;
  spec.edge_features = 8;
  const EventStream s = synthesize(spec);
  ASSERT_EQ(s.edge_dim, 8);
  ASSERT_EQ(static_cast<int64_t>(s.edge_feat.size()), s.num_events() * 8);
  double same = 0.0, other = 0.0, norm = 0.0;
  int64_t pairs = 0;
  for (int64_t e = 1; e < s.num_events(); ++e) {
    const float* x = &s.edge_feat[e * 8];
    for (int64_t f = 0; f < 8; ++f) {
      ASSERT_TRUE(std::isfinite(x[f]));
      norm += x[f] * x[f];
    }
    // The previous event of the same pair, if it is among the last 50 rows.
    for (int64_t back = e - 1; back >= std::max<int64_t>(0, e - 50); --back) {
      if (s.src[back] == s.src[e] && s.dst[back] == s.dst[e]) {
        const float* y = &s.edge_feat[back * 8];
        const float* z = &s.edge_feat[(e / 2) * 8];
        for (int64_t f = 0; f < 8; ++f) {
          same += x[f] * y[f];
          other += x[f] * z[f];
        }
        ++pairs;
        break;
      }
    }
  }
  ASSERT_GT(pairs, 1000);
  const double per = norm / static_cast<double>(s.num_events() - 1);  // E[x^2] summed over f
  EXPECT_NEAR(same / pairs / per, 0.64, 0.1);
  EXPECT_LT(std::abs(other / pairs / per), 0.2);
}

TEST(Synth, TargetsScaleCountsTogether) {
  const SynthTargets one = synth_targets(SynthShape::wikitalk, 1.0);
  EXPECT_EQ(one.num_nodes, 1140149);
  EXPECT_EQ(one.num_events, 7833140);
  const SynthTargets half = synth_targets(SynthShape::wikitalk, 0.5);
  EXPECT_EQ(half.num_nodes, 570075);
  EXPECT_EQ(half.num_events, 3916570);
  EXPECT_EQ(synth_targets(SynthShape::reddit, 2.0).num_events, 1344894);
}

TEST(Synth, BadSpecsAreUsageErrors) {
  EXPECT_EQ(parse_synth_shape("reddit"), SynthShape::reddit);
  try {
    parse_synth_shape("mooc");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
  SynthSpec spec;
  spec.scale = 0.0;
  EXPECT_THROW(synthesize(spec), Error);
  spec.scale = 0.01;
  spec.edge_features = -1;
  EXPECT_THROW(synthesize(spec), Error);
}

}  // namespace
}  // namespace depbloom::data
