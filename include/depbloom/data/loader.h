// Loading event streams from the formats users have (JODIE CSV, TGN ml_ triple, TGL
// edges.csv, SNAP/KONECT text, generic CSV), with format detection and the .npy cache.
// Bad input throws depbloom::Error of kind `data` naming the file, line and offending text.
#pragma once

#include <string>

#include "depbloom/data/event_stream.h"

namespace depbloom::data {

struct ColumnMap {  // for format "csv": 0-based column positions, -1 = absent
  int src = 0;
  int dst = 1;
  int time = 2;
  int label = -1;
  int first_feature = -1;  // features run from here to the end of the row
  bool header = true;
  char delimiter = ',';
  bool bipartite = false;  // src and dst are separate id spaces
};

struct LoadOptions {
  std::string format = "auto";  // auto | jodie | tgn | tgl | snap | konect | csv
  bool drop_self_loops = false;
  bool use_cache = true;
  std::string cache_dir;  // empty: <dir of the source>/.depbloom-cache
  ColumnMap columns;
  // Optional feature files (TGL edges.csv): .npy paths, empty = none.
  std::string edge_features;
  std::string node_features;
};

// Loads `path` (a file, or a folder holding ml_<name>.csv or edges.csv).
EventStream load_events(const std::string& path, const LoadOptions& options = {});

// Writes the stream to `dir` in the cache format (numpy-readable .npy arrays + meta).
void write_event_cache(const EventStream& stream, const std::string& dir);
EventStream read_event_cache(const std::string& dir);

}  // namespace depbloom::data
