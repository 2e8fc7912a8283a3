// The shipped WIKI stream for the training tests (integration and mpi): loaded without the
// cache (the source tree stays untouched), cut to its first `events` events with
// data::keep_first_events (as data.max_events does; 0 keeps all), split with TGN's protocol.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"

namespace dbtest {

struct WikiStream {
  depbloom::data::EventStream stream;
  depbloom::data::ChronoSplit split;
};

inline WikiStream load_wiki(int64_t events, uint64_t split_seed = 0) {
  WikiStream w;
  depbloom::data::LoadOptions load;
  load.use_cache = false;
  w.stream = depbloom::data::load_events(
      std::string(DEPBLOOM_SOURCE_DIR) + "/data/wikipedia/wikipedia_edges.csv", load);
  if (events > 0) depbloom::data::keep_first_events(w.stream, events);
  depbloom::data::SplitSpec spec;
  spec.protocol = depbloom::data::SplitProtocol::tgn;
  spec.seed = split_seed;
  w.split = depbloom::data::make_split(w.stream, spec);
  return w;
}

}  // namespace dbtest
