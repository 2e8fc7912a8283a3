// Internal to the data part: the table of data formats. Each entry says how `auto`
// recognises the format, which file of a folder holds its events and what the stream is
// called, and how its events and feature files are read. data.format's choices, loading
// and detection all read this table; a new format is one entry plus its ColumnPlan.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "delimited.h"
#include "depbloom/data/loader.h"

namespace depbloom::data::detail {

// What auto reads of a file: its name, then its first content line.
struct FileHead {
  std::string_view base;  // the file name, without its folder
  std::string_view line;  // the first content line, trimmed; empty while only the name is read
  char delimiter = ' ';   // ',' when the line holds a comma, else ' ' (runs of blanks)
  std::vector<std::string_view> fields;  // the line split on `delimiter`
};

// The kinds of evidence, in the order auto weighs them: a file name beats a comment marker,
// a marker beats a header, a header beats the shape of a data line.
enum class Clue { file_name, marker, header, shape };

// One way auto recognises a format: when `holds` is true, `reason` goes to the log.
struct FormatRule {
  Clue clue;
  bool (*holds)(const FileHead& head);
  const char* reason;
};

// How a folder names a format's events file.
struct Discovery {
  const char* pattern = nullptr;  // for the message listing what a folder may hold
  // The events file among the folder's `entries`; empty when there is none. Null: a folder
  // never resolves to this format.
  std::string (*find)(const std::filesystem::path& dir,
                      const std::vector<std::filesystem::path>& entries) = nullptr;
};

// The feature files a format keeps beside its events file, read when data.edge_features /
// data.node_features are empty and the file exists; "{}" stands for the events file's stem.
struct FeatureFiles {
  const char* edges = nullptr;
  const char* nodes = nullptr;
  bool warn_without_edges = false;  // the format is incomplete without them (TGN's triple)
};

struct FormatEntry {
  const char* name;   // data.format's value
  const char* title;  // one line: the title of its paragraph in docs/data.md
  std::vector<FormatRule> detection;
  Discovery discovery;
  // The stream's name, from the events file.
  std::string (*stream_name)(const std::filesystem::path& events);
  // The column plan of the events file (`text` is all of it, for formats with a header).
  ColumnPlan (*plan)(std::string_view text, const std::string& file, const LoadOptions& options);
  FeatureFiles features;
};

// Every format data.format names, in the order messages list them.
const std::vector<FormatEntry>& format_table();
// The entry called `format`; a config error naming data.format when there is none.
const FormatEntry& format_entry(const std::string& format);

// Parses `text` as `format` (a name in the table).
RawEvents parse_text_format(std::string_view text, const std::string& file,
                            const std::string& format, const LoadOptions& options);

// The format of a file from its name, else from its first content line (`head` is the
// start of the file). Throws a data error when neither says.
DetectedFormat guess_format(const std::string& file, std::string_view head);

}  // namespace depbloom::data::detail
