// Internal to the data part: turns parsed rows (RawEvents) into an EventStream: attaches
// feature tables, drops self-loops when asked, sorts stably by time and remaps ids densely.
#pragma once

#include <string>
#include <vector>

#include "delimited.h"
#include "depbloom/data/event_stream.h"

namespace depbloom::data::detail {

// A [rows x dim] float32 feature matrix read from a .npy file.
struct FeatureTable {
  std::vector<float> values;
  int64_t rows = 0;
  int64_t dim = 0;
  std::string file;  // empty: no table
};

// Reads a 2-d float .npy as a feature table (`what` names it in messages).
FeatureTable read_feature_table(const std::string& path, const char* what);

// Gives each event its row of `table`: row raw.feature_row[e] when the format has an idx
// column (TGN, where row 0 is padding), else row e (the table has one row per event).
void attach_edge_features(RawEvents& raw, const FeatureTable& table);

// Node feature rows are looked up by original id for one id space (the TGN/TGL layout) and
// by dense id when users and items are separate spaces.
EventStream build_event_stream(RawEvents raw, bool drop_self_loops,
                               const FeatureTable* node_features);

}  // namespace depbloom::data::detail
