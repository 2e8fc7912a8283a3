// Calibrated synthetic event streams with the published shapes of WIKI, REDDIT and
// WIKI-TALK: sizes, heavy-tailed activity, popularity, repetition in sessions with recent
// partners. A stream is a pure function of the spec (seed included), whatever the threads.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/data/event_stream.h"

namespace depbloom::data {

enum class SynthShape { wiki, reddit, wikitalk };

// Parses "wiki" | "reddit" | "wikitalk"; throws depbloom::Error (usage) otherwise.
SynthShape parse_synth_shape(const std::string& name);
const char* synth_shape_name(SynthShape shape);

struct SynthSpec {
  SynthShape shape = SynthShape::wiki;
  double scale = 1.0;  // multiplies node and event counts together
  uint64_t seed = 0;
  int64_t edge_features = 0;  // F: float32 features per event (0 = none)
};

// The published dataset's edge-feature width: 172 for WIKI and REDDIT (JODIE's files), 0
// for WIKI-TALK. `depbloom-data synth` and the synthetic configs use it.
int64_t synth_edge_features(SynthShape shape);

// The folder name that states a stream's shape, scale and width, e.g. "reddit-s0.1-f172",
// so a folder made with another width (an old featureless one) is never read in its place.
std::string synth_folder_name(const SynthSpec& spec);

// The `depbloom-data synth` command that makes `path` when its last component is such a
// name (seed 0); "" otherwise. The loader adds it to a missing folder's message.
std::string synth_command_for(const std::string& path);

// What the generator aims at for a shape at a scale (published figures, counts scaled).
// A target of 0 means the published data give none.
struct SynthTargets {
  bool bipartite = false;
  int64_t num_nodes = 0;
  int64_t num_users = 0;  // bipartite only
  int64_t num_items = 0;  // bipartite only
  int64_t num_events = 0;
  double span_days = 0.0;
  double repeat_fraction = 0.0;
  double repeat_last1_share = 0.0;
  double repeat_last5_share = 0.0;
  double activity_median = 0.0;
  double activity_one_share = 0.0;
  double activity_top1pct_share = 0.0;
  double min_item_degree = 0.0;
  double degree_alpha = 0.0;  // power-law exponent of the total degree
};

SynthTargets synth_targets(SynthShape shape, double scale);

// Generates the stream: sorted by time, dense ids by first appearance (users first when
// bipartite), timestamps in whole seconds from 0, event_id = row. Throws depbloom::Error
// (usage) on a scale that leaves no events or overflows the id types.
EventStream synthesize(const SynthSpec& spec);

}  // namespace depbloom::data
