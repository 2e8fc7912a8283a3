// Loading event streams from the formats users have (JODIE CSV, TGN ml_ triple, TGL
// edges.csv, SNAP/KONECT text, generic CSV), with format detection and the .npy cache.
// Bad input throws depbloom::Error of kind `data` naming the file, line and offending text.
// Formats, quirks and the cache are described in docs/data.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::data {

struct ColumnMap {  // for format "csv": 0-based column positions, -1 = absent
  int src = 0;
  int dst = 1;
  int time = 2;
  int label = -1;
  int first_feature = -1;  // features run from here to the end of the row
  bool header = true;
  char delimiter = ',';    // ' ' splits on runs of spaces and tabs
  bool bipartite = false;  // src and dst are separate id spaces
  int split = -1;          // a file-given split column: 0 train, 1 val, 2 test
  char comment = 0;        // lines starting with this character are skipped (0: none)
};

// data.format's values: "auto", then every format the loaders read (src/data/format_table.cpp),
// in the order messages list them.
std::vector<std::string> format_choices();

struct LoadOptions {
  std::string format = "auto";  // one of format_choices()
  bool drop_self_loops = false;
  bool use_cache = true;
  std::string cache_dir;  // empty: <dir of the source>/.depbloom-cache
  ColumnMap columns;
  // Optional feature files (TGL edges.csv): .npy paths, empty = none. For the TGN triple
  // they default to ml_<name>.npy and ml_<name>_node.npy; for TGL to edge_features.npy
  // and node_features.npy beside edges.csv, when those exist.
  std::string edge_features;
  std::string node_features;
  // KONECT `src dst weight time`: keep the weight as a 1-dim edge feature.
  bool weight_as_feature = true;
  // A folder of TGB's fixed evaluation negatives as tools/tgb_negatives.py writes them
  // (tgb.h); empty = none.
  std::string tgb_negatives;
};

// The format a path holds and why it was chosen (file name or first line).
struct DetectedFormat {
  std::string format;  // one of format_choices() other than auto
  std::string file;    // the events file (a folder resolves to the file inside it)
  std::string reason;  // for the log, e.g. "file name ml_*.csv"
};
DetectedFormat detect_format(const std::string& path);

// Loads `path`: a file, a folder holding ml_<name>.csv, edges.csv or one out.* file, or a
// folder written by write_event_cache (meta.json beside the arrays).
EventStream load_events(const std::string& path, const LoadOptions& options = {});

// Parses text already in memory as `format` (not "auto"); feature files are not read.
// `name` stands for the file in messages. Used by the fuzzers and the tests.
EventStream parse_event_text(std::string_view text, const std::string& format,
                             const std::string& name, const LoadOptions& options = {});

// The cache folder load_events uses for `path` with these options.
std::string cache_folder(const std::string& path, const LoadOptions& options = {});

// Writes the stream to `dir` in the cache format (numpy-readable .npy arrays + meta.json),
// atomically: into a temporary folder beside `dir`, then renamed over it.
void write_event_cache(const EventStream& stream, const std::string& dir);
// Reads a cache folder (arrays are memory-mapped, then copied into the stream).
EventStream read_event_cache(const std::string& dir);

}  // namespace depbloom::data
