// compute_stream_stats on small hand-made streams (every number checked exactly) and the
// Clauset-Shalizi-Newman power-law fit on samples from known discrete power laws.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/data/power_law.h"
#include "depbloom/data/stream_stats.h"

namespace depbloom::data {
namespace {

struct Ev {
  int32_t src, dst;
  double ts;
};

EventStream make_stream(const std::vector<Ev>& events, int32_t num_nodes, int32_t num_users) {
  EventStream s;
  for (const Ev& e : events) {
    s.src.push_back(e.src);
    s.dst.push_back(e.dst);
    s.ts.push_back(e.ts);
    s.event_id.push_back(s.num_events() - 1);
  }
  s.num_nodes = num_nodes;
  s.bipartite = num_users > 0;
  s.num_users = num_users;
  s.name = "hand-made";
  return s;
}

// Users 0..2, items 3..4. Repeats: e1 (to the last partner), e4 and e5 (second latest),
// e7 (last partner). Ties: e2 and e6.
TEST(StreamStats, SmallBipartiteStreamExactly) {
  const EventStream s = make_stream({{0, 3, 0},
                                     {0, 3, 10},
                                     {0, 4, 10},
                                     {1, 3, 20},
                                     {0, 3, 30},
                                     {0, 4, 86430},
                                     {2, 4, 86430},
                                     {1, 3, 172800}},
                                    5, 3);
  const StreamStats st = compute_stream_stats(s);
  EXPECT_EQ(st.num_nodes, 5);
  EXPECT_EQ(st.active_nodes, 5);
  EXPECT_EQ(st.num_events, 8);
  EXPECT_TRUE(st.bipartite);
  EXPECT_EQ(st.num_users, 3);
  EXPECT_EQ(st.num_items, 2);
  EXPECT_DOUBLE_EQ(st.span_days, 2.0);
  EXPECT_EQ(st.ties, 2);
  EXPECT_EQ(st.self_loops, 0);
  EXPECT_EQ(st.distinct_pairs, 4);
  EXPECT_DOUBLE_EQ(st.repeat_fraction, 0.5);
  EXPECT_DOUBLE_EQ(st.repeat_last1_share, 0.5);
  EXPECT_DOUBLE_EQ(st.repeat_last5_share, 1.0);
  // Degrees sorted: 1 2 3 5 5.
  EXPECT_EQ(st.degree.min, 1);
  EXPECT_EQ(st.degree.p25, 2);
  EXPECT_EQ(st.degree.p50, 3);
  EXPECT_EQ(st.degree.p75, 5);
  EXPECT_EQ(st.degree.max, 5);
  EXPECT_DOUBLE_EQ(st.degree.mean, 3.2);
  // Users made 5, 2 and 1 events; the top 1% is one user.
  EXPECT_EQ(st.activity.count, 3);
  EXPECT_EQ(st.activity.p50, 2);
  EXPECT_DOUBLE_EQ(st.activity_one_share, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(st.activity_top1pct_share, 5.0 / 8.0);
  EXPECT_EQ(st.popularity.count, 2);
  EXPECT_EQ(st.popularity.min, 3);
  EXPECT_EQ(st.popularity.max, 5);
}

// A repeat to a partner six visits back is outside the last five; self-loops count twice
// in the degree.
TEST(StreamStats, RecencyWindowAndSelfLoops) {
  const EventStream s = make_stream({{0, 1, 1},
                                     {0, 2, 2},
                                     {0, 3, 3},
                                     {0, 4, 4},
                                     {0, 5, 5},
                                     {0, 6, 6},
                                     {0, 1, 7},
                                     {0, 1, 8},
                                     {7, 7, 9},
                                     {7, 7, 9}},
                                    8, 0);
  const StreamStats st = compute_stream_stats(s);
  EXPECT_FALSE(st.bipartite);
  EXPECT_EQ(st.distinct_pairs, 7);
  EXPECT_DOUBLE_EQ(st.repeat_fraction, 0.3);
  EXPECT_DOUBLE_EQ(st.repeat_last1_share, 2.0 / 3.0);  // e7 and the second self-loop
  EXPECT_DOUBLE_EQ(st.repeat_last5_share, 2.0 / 3.0);
  EXPECT_EQ(st.self_loops, 2);
  EXPECT_EQ(st.ties, 1);
  EXPECT_EQ(st.degree.max, 8);  // node 0: eight events
  EXPECT_EQ(st.activity.max, 8);
  EXPECT_EQ(st.popularity.max, 3);  // node 1
  const std::string text = format_stream_stats(st);
  EXPECT_NE(text.find("self-loops       2"), std::string::npos);
}

TEST(StreamStats, EmptyStreamAndBadIds) {
  const StreamStats empty = compute_stream_stats(make_stream({}, 3, 0));
  EXPECT_EQ(empty.num_events, 0);
  EXPECT_EQ(empty.active_nodes, 0);
  EXPECT_EQ(empty.degree_power_law.n_tail, 0);
  try {
    compute_stream_stats(make_stream({{0, 1, 0}, {0, 9, 1}}, 3, 0));
    FAIL() << "an id outside the node range must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(e.message().find("event 1"), std::string::npos);
  }
}

TEST(PowerLaw, HurwitzZetaKnownValues) {
  const double pi = 3.14159265358979323846;
  EXPECT_NEAR(hurwitz_zeta(2.0, 1.0), pi * pi / 6.0, 1e-12);
  EXPECT_NEAR(hurwitz_zeta(2.0, 0.5), pi * pi / 2.0, 1e-11);
  EXPECT_NEAR(hurwitz_zeta(3.0, 1.0), 1.2020569031595943, 1e-12);
  // zeta(s, q) - zeta(s, q + 1) = q^-s.
  EXPECT_NEAR(hurwitz_zeta(2.7, 3.0) - hurwitz_zeta(2.7, 4.0), std::pow(3.0, -2.7), 1e-13);
  EXPECT_NEAR(hurwitz_zeta(1.5, 250.0) - hurwitz_zeta(1.5, 251.0), std::pow(250.0, -1.5), 1e-13);
}

// Exact draws from p(x) = x^-alpha / zeta(alpha, x_min), x >= x_min, by inverting the CDF
// on a table long enough that the cut tail is below 1e-7.
std::vector<int64_t> power_law_sample(double alpha, int64_t x_min, int n, uint64_t seed) {
  const double z = hurwitz_zeta(alpha, static_cast<double>(x_min));
  std::vector<double> cdf;
  double c = 0.0;
  for (int64_t x = x_min; c < 1.0 - 1e-7 && x < x_min + 50'000'000; ++x) {
    c += std::pow(static_cast<double>(x), -alpha) / z;
    cdf.push_back(c);
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int64_t> out(n);
  for (int k = 0; k < n; ++k) {
    const auto it = std::lower_bound(cdf.begin(), cdf.end(), u(rng));
    out[k] = x_min + (it - cdf.begin());
  }
  return out;
}

TEST(PowerLaw, MleRecoversTheExponentAtAKnownXmin) {
  const auto x = power_law_sample(2.5, 1, 20000, 7);
  EXPECT_NEAR(discrete_power_law_mle(x, 1), 2.5, 0.05);
}

struct FitCase {
  double alpha;
  int64_t x_min;
};

class PowerLawFitTest : public ::testing::TestWithParam<FitCase> {};

// A power-law tail above x_min with a flat body below it: the KS scan must find the tail
// and the MLE its exponent within 0.1.
TEST_P(PowerLawFitTest, RecoversAlphaAndXmin) {
  const FitCase fc = GetParam();
  auto values = power_law_sample(fc.alpha, fc.x_min, 5000, 11);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> body(1, fc.x_min - 1);
  if (fc.x_min > 1)
    for (int k = 0; k < 5000; ++k) values.push_back(body(rng));
  const PowerLawFit fit = fit_discrete_power_law(values);
  EXPECT_NEAR(fit.alpha, fc.alpha, 0.1);
  EXPECT_GE(fit.x_min, fc.x_min - 1);
  EXPECT_LE(fit.x_min, 3 * fc.x_min);
  EXPECT_LT(fit.ks, 0.03);
  EXPECT_GT(fit.alpha_se, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Exponents, PowerLawFitTest,
                         ::testing::Values(FitCase{2.8, 1}, FitCase{2.8, 10}, FitCase{2.2, 5},
                                           FitCase{3.5, 20}));

TEST(PowerLaw, TooFewValuesGiveNoFit) {
  const PowerLawFit fit = fit_discrete_power_law({1, 2, 3}, 10);
  EXPECT_EQ(fit.n_tail, 0);
  EXPECT_EQ(fit.alpha, 0.0);
}

}  // namespace
}  // namespace depbloom::data
