// RecentSampler and UniformSampler on random streams: recent equals a brute-force scan
// exactly (order and dt included, every hop); uniform draws only earlier interactions and
// reaches all of them; both give identical bytes for 1 and 2 threads and any batch layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "depbloom/core/error.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "graph_test_util.h"

namespace depbloom::graph {
namespace {

using testing::Interaction;
using testing::random_stream;
using testing::StreamShape;

// Random roots: some -1, times that tie with events, fall between them or lie outside.
struct Roots {
  std::vector<int32_t> nodes;
  std::vector<double> times;
  std::vector<uint64_t> keys;
  RootBatch batch() const {
    RootBatch b;
    b.nodes = nodes.data();
    b.times = times.data();
    b.keys = keys.data();
    b.count = static_cast<int64_t>(nodes.size());
    return b;
  }
};

Roots random_roots(const data::EventStream& s, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  Roots r;
  for (int64_t i = 0; i < count; ++i) {
    const size_t e = rng() % s.ts.size();
    const int kind = static_cast<int>(rng() % 10);
    int32_t node = static_cast<int32_t>(rng() % static_cast<uint32_t>(s.num_nodes));
    if (kind == 0) node = -1;
    if (kind <= 4) node = kind % 2 == 0 ? s.src[e] : s.dst[e];
    double t = s.ts[e];
    if (kind == 5) t += 0.5;
    if (kind == 6) t = s.ts.front() - 1.0;
    if (kind == 7) t = s.ts.back() + 1.0;
    r.nodes.push_back(node);
    r.times.push_back(t);
    r.keys.push_back(1000003u * i + 17);
  }
  return r;
}

// Row q of a block against the brute-force recent scan of (node, t).
void expect_recent_row(const data::EventStream& s, const Block& b, int64_t q, int32_t node,
                       double t) {
  std::vector<Interaction> expected;
  if (node >= 0) expected = testing::scan_recent(s, node, t, b.k);
  for (int32_t j = 0; j < b.k; ++j) {
    const int64_t i = q * b.k + j;
    if (j < static_cast<int32_t>(expected.size())) {
      const Interaction& x = expected[static_cast<size_t>(j)];
      ASSERT_EQ(b.mask[i], 1) << "root " << q << " slot " << j;
      ASSERT_EQ(b.nbr[i], x.nbr) << "root " << q << " slot " << j;
      ASSERT_EQ(b.eid[i], x.event) << "root " << q << " slot " << j;
      ASSERT_EQ(b.dt[i], static_cast<float>(t - x.ts)) << "root " << q << " slot " << j;
    } else {
      ASSERT_EQ(b.mask[i], 0) << "root " << q << " slot " << j;
      ASSERT_EQ(b.nbr[i], -1);
      ASSERT_EQ(b.eid[i], -1);
      ASSERT_EQ(b.dt[i], 0.0f);
    }
  }
}

TEST(RecentSampler, MatchesBruteForce) {
  const data::EventStream s = random_stream({}, 11);
  const TemporalCsr csr = TemporalCsr::build(s);
  const Roots roots = random_roots(s, 700, 12);
  for (int32_t k : {1, 3, 10, 64}) {
    RecentSampler sampler(csr, k);
    BlockBuffers out;
    sampler.sample(roots.batch(), 0, out);
    const Block& b = out.hop(0);
    ASSERT_EQ(b.num_roots, 700);
    for (int64_t q = 0; q < b.num_roots; ++q) {
      expect_recent_row(s, b, q, roots.nodes[static_cast<size_t>(q)],
                        roots.times[static_cast<size_t>(q)]);
    }
  }
}

TEST(RecentSampler, EveryHopMatchesBruteForce) {
  const data::EventStream s = random_stream({}, 13);
  const TemporalCsr csr = TemporalCsr::build(s);
  const Roots roots = random_roots(s, 120, 14);
  RecentSampler sampler(csr, 4, 3);
  BlockBuffers out;
  sampler.sample(roots.batch(), 0, out);
  for (int64_t q = 0; q < 120; ++q) {
    expect_recent_row(s, out.hop(0), q, roots.nodes[static_cast<size_t>(q)],
                      roots.times[static_cast<size_t>(q)]);
  }
  EXPECT_EQ(out.hop(2).slot, nullptr);  // the last hop has no next hop to seed
  for (int32_t l = 1; l < 3; ++l) {
    const Block& prev = out.hop(l - 1);
    const Block& b = out.hop(l);
    ASSERT_EQ(b.num_roots, prev.num_slots());
    for (int64_t i = 0; i < prev.num_slots(); ++i) {
      ASSERT_EQ(prev.slot[i] >= 0, prev.mask[i] == 1);
      if (prev.slot[i] >= 0) {
        ASSERT_EQ(csr.events()[prev.slot[i]], prev.eid[i]);
      }
    }
    for (int64_t q = 0; q < b.num_roots; ++q) {
      // Root q of hop l is slot q of hop l-1, queried at the time of that slot's event.
      const bool valid = prev.eid[q] >= 0;
      const double t = valid ? s.ts[static_cast<size_t>(prev.eid[q])] : 0.0;
      expect_recent_row(s, b, q, valid ? prev.nbr[q] : -1, t);
    }
  }
}

TEST(UniformSampler, DrawsOnlyEarlierInteractions) {
  const data::EventStream s = random_stream({}, 15);
  const TemporalCsr csr = TemporalCsr::build(s);
  const Roots roots = random_roots(s, 800, 16);
  UniformSampler sampler(csr, 7, 2, 99);
  BlockBuffers out;
  sampler.sample(roots.batch(), 3, out);
  for (int32_t l = 0; l < 2; ++l) {
    const Block& b = out.hop(l);
    for (int64_t q = 0; q < b.num_roots; ++q) {
      int32_t node = -1;
      double t = 0.0;
      if (l == 0) {
        node = roots.nodes[static_cast<size_t>(q)];
        t = roots.times[static_cast<size_t>(q)];
      } else if (out.hop(0).eid[q] >= 0) {
        node = out.hop(0).nbr[q];
        t = s.ts[static_cast<size_t>(out.hop(0).eid[q])];
      }
      const int64_t candidates = node < 0 ? 0 : csr.earlier_end(node, t) - csr.begin(node);
      for (int32_t j = 0; j < b.k; ++j) {
        const int64_t i = q * b.k + j;
        ASSERT_EQ(b.mask[i], candidates > 0 ? 1 : 0) << "hop " << l << " root " << q;
        if (candidates == 0) {
          ASSERT_EQ(b.nbr[i], -1);
          ASSERT_EQ(b.eid[i], -1);
          continue;
        }
        // The slot is an interaction of `node` with nbr, strictly before t.
        const size_t e = static_cast<size_t>(b.eid[i]);
        ASSERT_LT(s.ts[e], t);
        const bool as_src = s.src[e] == node && s.dst[e] == b.nbr[i];
        const bool as_dst = s.dst[e] == node && s.src[e] == b.nbr[i];
        ASSERT_TRUE(as_src || as_dst) << "event " << e << " does not link " << node;
        ASSERT_EQ(b.dt[i], static_cast<float>(t - s.ts[e]));
      }
    }
  }
}

TEST(UniformSampler, ReachesEveryCandidate) {
  const data::EventStream s = random_stream({}, 17);
  const TemporalCsr csr = TemporalCsr::build(s);
  UniformSampler sampler(csr, 10, 1, 5);
  int checked = 0;
  for (int32_t node = 0; node < s.num_nodes; ++node) {
    const double t = s.ts[s.ts.size() / 2];
    const int64_t candidates = csr.earlier_end(node, t) - csr.begin(node);
    if (candidates == 0) continue;
    // 300 roots with distinct keys: 3000 draws over at most a few dozen candidates.
    Roots roots;
    for (uint64_t i = 0; i < 300; ++i) {
      roots.nodes.push_back(node);
      roots.times.push_back(t);
      roots.keys.push_back(i);
    }
    BlockBuffers out;
    sampler.sample(roots.batch(), 0, out);
    std::set<int64_t> seen(out.hop(0).eid, out.hop(0).eid + out.hop(0).num_slots());
    ASSERT_EQ(static_cast<int64_t>(seen.size()), candidates) << "node " << node;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

void expect_same_blocks(const BlockBuffers& a, const BlockBuffers& b) {
  ASSERT_EQ(a.hops(), b.hops());
  for (int32_t l = 0; l < a.hops(); ++l) {
    const Block& x = a.hop(l);
    const Block& y = b.hop(l);
    ASSERT_EQ(x.num_roots, y.num_roots);
    const int64_t n = x.num_slots();
    EXPECT_TRUE(std::equal(x.nbr, x.nbr + n, y.nbr)) << "hop " << l;
    EXPECT_TRUE(std::equal(x.eid, x.eid + n, y.eid)) << "hop " << l;
    EXPECT_TRUE(std::equal(x.dt, x.dt + n, y.dt)) << "hop " << l;
    EXPECT_TRUE(std::equal(x.mask, x.mask + n, y.mask)) << "hop " << l;
  }
}

TEST(NeighbourSampler, OneAndTwoThreadsGiveIdenticalBlocks) {
  StreamShape shape;
  shape.num_nodes = 200;
  shape.num_events = 6000;
  const data::EventStream s = random_stream(shape, 19);
  const TemporalCsr csr = TemporalCsr::build(s);
  const Roots roots = random_roots(s, 3000, 20);  // above the parallel threshold
  RecentSampler recent(csr, 10, 2);
  UniformSampler uniform(csr, 10, 2, 77);
  for (const NeighbourSampler* sampler : {static_cast<const NeighbourSampler*>(&recent),
                                          static_cast<const NeighbourSampler*>(&uniform)}) {
    BlockBuffers one, two;
    testing::with_threads(1, [&] { sampler->sample(roots.batch(), 4, one); });
    testing::with_threads(2, [&] { sampler->sample(roots.batch(), 4, two); });
    expect_same_blocks(one, two);
  }
}

TEST(UniformSampler, DrawsFollowTheKeyNotTheBatch) {
  const data::EventStream s = random_stream({}, 21);
  const TemporalCsr csr = TemporalCsr::build(s);
  const Roots roots = random_roots(s, 900, 22);
  UniformSampler sampler(csr, 5, 2, 1234);
  BlockBuffers whole;
  sampler.sample(roots.batch(), 1, whole);

  // The same roots reversed, with their keys: every row moves, none changes.
  Roots reversed = roots;
  std::reverse(reversed.nodes.begin(), reversed.nodes.end());
  std::reverse(reversed.times.begin(), reversed.times.end());
  std::reverse(reversed.keys.begin(), reversed.keys.end());
  BlockBuffers back;
  sampler.sample(reversed.batch(), 1, back);
  const int64_t rows0 = 900;
  const int64_t span = 5;  // hop-1 rows per hop-0 root
  for (int32_t l = 0; l < 2; ++l) {
    const int64_t per_root = l == 0 ? 1 : span;
    const Block& a = whole.hop(l);
    const Block& b = back.hop(l);
    for (int64_t q = 0; q < a.num_slots(); ++q) {
      const int64_t root = q / (per_root * a.k);
      const int64_t within = q % (per_root * a.k);
      const int64_t p = (rows0 - 1 - root) * per_root * a.k + within;
      ASSERT_EQ(a.eid[q], b.eid[p]) << "hop " << l << " slot " << q;
    }
  }

  // Another epoch or seed draws other neighbours.
  BlockBuffers other_epoch, other_seed;
  sampler.sample(roots.batch(), 2, other_epoch);
  UniformSampler(csr, 5, 2, 4321).sample(roots.batch(), 1, other_seed);
  const Block& a = whole.hop(0);
  EXPECT_FALSE(std::equal(a.eid, a.eid + a.num_slots(), other_epoch.hop(0).eid));
  EXPECT_FALSE(std::equal(a.eid, a.eid + a.num_slots(), other_seed.hop(0).eid));
}

TEST(BlockBuffers, ReusedWithoutReallocation) {
  const data::EventStream s = random_stream({}, 23);
  const TemporalCsr csr = TemporalCsr::build(s);
  const Roots big = random_roots(s, 600, 24);
  const Roots small = random_roots(s, 100, 25);
  RecentSampler sampler(csr, 10, 2);
  BlockBuffers out(600, 10, 2);
  const int32_t* nbr0 = out.hop(0).nbr;
  const int64_t* eid1 = out.hop(1).eid;
  sampler.sample(big.batch(), 0, out);
  sampler.sample(small.batch(), 0, out);
  EXPECT_EQ(out.hop(0).nbr, nbr0);
  EXPECT_EQ(out.hop(1).eid, eid1);
  EXPECT_EQ(out.hop(0).num_roots, 100);
  EXPECT_EQ(out.hop(1).num_roots, 1000);
  EXPECT_EQ(out.hop(1).nbr_tensor().shape(), Shape(1000, 10));
  const Roots bigger = random_roots(s, 601, 26);
  sampler.sample(bigger.batch(), 0, out);
  EXPECT_GE(out.capacity(), 601);
  expect_recent_row(s, out.hop(0), 600, bigger.nodes[600], bigger.times[600]);
}

TEST(NeighbourSampler, RejectsRootsOutsideTheGraph) {
  const data::EventStream s = random_stream({}, 27);
  const TemporalCsr csr = TemporalCsr::build(s);
  Roots roots = random_roots(s, 10, 28);
  roots.nodes[3] = s.num_nodes;
  RecentSampler sampler(csr, 4);
  BlockBuffers out;
  EXPECT_THROW(sampler.sample(roots.batch(), 0, out), Error);
  roots.nodes[3] = -2;
  EXPECT_THROW(sampler.sample(roots.batch(), 0, out), Error);
  EXPECT_THROW(RecentSampler(csr, 0), Error);
}

}  // namespace
}  // namespace depbloom::graph
