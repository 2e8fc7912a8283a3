// Unit tests of the counter-based generator: Philox4x32-10 against the known-answer vectors
// of Random123 (kat_vectors), the uniform conversions' ranges and means, and that draws
// differ by seed, purpose, epoch, index and lane while repeating exactly for equal inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "depbloom/core/philox.h"

namespace depbloom {
namespace {

void expect_words(const Philox4& got, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  EXPECT_EQ(got.v[0], a) << std::hex << got.v[0];
  EXPECT_EQ(got.v[1], b) << std::hex << got.v[1];
  EXPECT_EQ(got.v[2], c) << std::hex << got.v[2];
  EXPECT_EQ(got.v[3], d) << std::hex << got.v[3];
}

// Random123 kat_vectors: "philox4x32 10 <ctr0..3> <key0..1> <out0..3>".
TEST(Philox, KnownAnswerVectors) {
  expect_words(philox4x32(0, 0, 0, 0, 0, 0), 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  expect_words(philox4x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff),
               0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  expect_words(philox4x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0),
               0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1);
}

TEST(Philox, UniformFloatRangeAndMean) {
  EXPECT_EQ(uniform_float(0u), 0.0f);
  EXPECT_LT(uniform_float(0xffffffffu), 1.0f);
  EXPECT_EQ(uniform_float(0xffffffffu), 1.0f - 1.0f / 16777216.0f);
  const RngKey key{12345, static_cast<uint32_t>(RngPurpose::test), 0};
  const int n = 100000;
  double sum = 0.0, lo = 1.0, hi = 0.0;
  for (int i = 0; i < n; ++i) {
    double u = uniform_float(philox_u32(key, static_cast<uint64_t>(i), 0));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  // Mean of U[0,1) is 1/2 with standard error sqrt(1/12/n) ~ 9e-4.
  EXPECT_NEAR(sum / n, 0.5, 5.0 * std::sqrt(1.0 / 12.0 / n));
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1.0 - 1e-3);
}

TEST(Philox, UniformDoubleAndBelow) {
  EXPECT_EQ(uniform_double(0u, 0u), 0.0);
  EXPECT_LT(uniform_double(0xffffffffu, 0xffffffffu), 1.0);
  const RngKey key{99, static_cast<uint32_t>(RngPurpose::test), 1};
  double sum = 0.0;
  int counts[7] = {0};
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    Philox4 d = philox_draw(key, static_cast<uint64_t>(i), 0);
    double u = uniform_double(d.v[0], d.v[1]);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    uint32_t k = uniform_below(d.v[2], 7);
    ASSERT_LT(k, 7u);
    ++counts[k];
  }
  EXPECT_NEAR(sum / n, 0.5, 5.0 * std::sqrt(1.0 / 12.0 / n));
  for (int c : counts) EXPECT_NEAR(c, n / 7.0, 5.0 * std::sqrt(n / 7.0));  // ~ 5 sigma
  EXPECT_EQ(uniform_below(0xffffffffu, 1), 0u);
  EXPECT_EQ(uniform_below(0xffffffffu, 1000), 999u);
}

TEST(Philox, DrawsArePureFunctionsOfTheirInputs) {
  const RngKey key{7, static_cast<uint32_t>(RngPurpose::dropout), 2};
  Philox4 a = philox_draw(key, 123456789012ULL, 3);
  Philox4 b = philox_draw(key, 123456789012ULL, 3);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.v[i], b.v[i]);
}

TEST(Philox, DrawsDifferByEveryPartOfTheKeyAndCounter) {
  const RngKey base{0x1234567890ULL, static_cast<uint32_t>(RngPurpose::negative_train), 5};
  auto first = [](const RngKey& k, uint64_t index, uint32_t lane) {
    Philox4 d = philox_draw(k, index, lane);
    return (static_cast<uint64_t>(d.v[0]) << 32) | d.v[1];
  };
  std::set<uint64_t> seen;
  seen.insert(first(base, 10, 0));
  RngKey k = base;
  k.purpose = static_cast<uint32_t>(RngPurpose::negative_eval);
  seen.insert(first(k, 10, 0));
  k = base;
  k.epoch = 6;
  seen.insert(first(k, 10, 0));
  k = base;
  k.seed ^= 1;
  seen.insert(first(k, 10, 0));
  k = base;
  k.seed ^= uint64_t{1} << 40;  // the seed's high half matters too
  seen.insert(first(k, 10, 0));
  seen.insert(first(base, 11, 0));
  seen.insert(first(base, 10 + (uint64_t{1} << 32), 0));  // the index's high half matters
  seen.insert(first(base, 10, 1));
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(philox_u32(base, 10, 0), philox_draw(base, 10, 0).v[0]);
}

// Within one stream, neighbouring indices look independent (a smoke test of the mixing).
TEST(Philox, NeighbouringIndicesAreUncorrelated) {
  const RngKey key{1, static_cast<uint32_t>(RngPurpose::init), 0};
  const int n = 20000;
  double sxy = 0.0, sx = 0.0, sxx = 0.0;
  double prev = uniform_float(philox_u32(key, 0, 0));
  for (int i = 1; i <= n; ++i) {
    double cur = uniform_float(philox_u32(key, static_cast<uint64_t>(i), 0));
    sxy += prev * cur;
    sx += prev;
    sxx += prev * prev;
    prev = cur;
  }
  double mean = sx / n, var = sxx / n - mean * mean;
  double corr = (sxy / n - mean * mean) / var;
  EXPECT_LT(std::fabs(corr), 5.0 / std::sqrt(static_cast<double>(n)));
}

}  // namespace
}  // namespace depbloom
