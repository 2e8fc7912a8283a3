// A tiny hand-made event stream and its chronological split for the trainer tests: 60
// events among 10 nodes (non-bipartite, no self loops), timestamps increasing by one with
// a tie every seventh event, 3 random edge features per event; train = the first 40
// events, val = the next 10, test = the last 10. Test code only.
#pragma once

#include <cstdint>
#include <random>

#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"

namespace dbtraintest {

inline depbloom::data::EventStream tiny_stream(uint64_t seed = 11, int64_t events = 60,
                                               int32_t nodes = 10, int64_t edge_dim = 3) {
  depbloom::data::EventStream s;
  s.name = "tiny";
  s.source = "tiny-stream";
  s.num_nodes = nodes;
  s.edge_dim = edge_dim;
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int32_t> node(0, nodes - 1);
  std::uniform_real_distribution<float> feat(-1.0f, 1.0f);
  double t = 100.0;  // relative times are what the model sees
  for (int64_t e = 0; e < events; ++e) {
    const int32_t a = node(gen);
    int32_t b = node(gen);
    while (b == a) b = node(gen);
    s.src.push_back(a);
    s.dst.push_back(b);
    if (e % 7 != 3) t += 1.0;  // events 3, 10, 17, ... share the previous timestamp
    s.ts.push_back(t);
    s.event_id.push_back(e);
    for (int64_t f = 0; f < edge_dim; ++f) s.edge_feat.push_back(feat(gen));
  }
  for (int32_t n = 0; n < nodes; ++n) s.original_id.push_back(n);
  return s;
}

// train [0, train_end), val [train_end, val_end), test [val_end, E).
inline depbloom::data::ChronoSplit tiny_split(const depbloom::data::EventStream& s,
                                              int64_t train_end = 40, int64_t val_end = 50) {
  depbloom::data::ChronoSplit split;
  split.protocol = depbloom::data::SplitProtocol::tgl;
  for (int64_t e = 0; e < s.num_events(); ++e)
    (e < train_end ? split.train : e < val_end ? split.val : split.test).push_back(e);
  split.val_time = s.ts[static_cast<size_t>(train_end)];
  split.test_time = s.ts[static_cast<size_t>(val_end)];
  return split;
}

}  // namespace dbtraintest
