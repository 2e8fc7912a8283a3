// Internal to the data part: the line scanner and the one delimited-text parser that every
// text format (JODIE, TGN, TGL, SNAP, KONECT, generic CSV) runs with its own ColumnPlan,
// and RawEvents, the parsed rows before id remapping and sorting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace depbloom::data::detail {

// Rows as the file gives them: original ids, file order, nothing dropped.
struct RawEvents {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<double> ts;
  std::vector<int32_t> label;    // empty when the format has no label column
  std::vector<float> edge_feat;  // [E x edge_dim] from the text, or attached later
  int64_t edge_dim = 0;
  std::vector<int8_t> split;         // empty when the file has no split column
  std::vector<int64_t> feature_row;  // TGN idx: row of ml_<name>.npy; empty when none
  std::vector<int64_t> line;         // 1-based line of each event, for later messages
  bool two_id_spaces = false;        // src and dst ids are separate spaces (JODIE users/items)
  std::string file;                  // shown in messages

  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// Which field holds what. Columns are 0-based; -1 means absent.
struct ColumnPlan {
  char delimiter = ',';  // ' ' means runs of spaces and tabs
  char comment = 0;      // lines whose first non-blank character is this are skipped
  bool header = false;   // the first content line is a header (and must not look like data)
  int src = 0;
  int dst = 1;
  int time = 2;
  int label = -1;
  int split = -1;
  int feature_row = -1;
  int feature_begin = -1;
  int feature_end = -1;   // exclusive; -1 runs to the end of the row
  int fixed_fields = -1;  // exact field count, or -1 for "at least what the columns need"
  bool two_id_spaces = false;
  const char* format = "csv";  // for messages
  // Set when the columns come from config keys ("data.columns."): a row too short for
  // them names the key at fault.
  const char* column_key_prefix = nullptr;
};

// Splits lines on \n, strips a trailing \r, skips a UTF-8 byte-order mark, counts lines.
class LineScanner {
 public:
  explicit LineScanner(std::string_view text);
  bool next(std::string_view& line);
  int64_t line_number() const { return line_number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_number_ = 0;
};

std::string_view trim(std::string_view s);
// Splits `line` into `fields` (trimmed); delimiter ' ' splits on runs of blanks.
void split_fields(std::string_view line, char delimiter, std::vector<std::string_view>& fields);
// The first line that is neither blank nor a comment; false when there is none.
bool first_content_line(std::string_view text, char comment, std::string_view& line,
                        int64_t& line_number);
// True when the whole field parses as a number (used to tell a header from data).
bool looks_numeric(std::string_view field);
// `text` cut to about 60 characters with control bytes shown as '?', for messages.
std::string excerpt(std::string_view text);

[[noreturn]] void fail_at(const std::string& file, int64_t line, std::string_view text,
                          const std::string& what);

RawEvents parse_delimited(std::string_view text, const std::string& file, const ColumnPlan& plan);

}  // namespace depbloom::data::detail
