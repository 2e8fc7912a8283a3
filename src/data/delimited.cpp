// The delimited-text parser shared by all text formats: one pass over the bytes, one line
// at a time, numbers by std::from_chars. Every rejection names the file, the line and the
// offending text; nothing is skipped or guessed silently.
#include "delimited.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "depbloom/core/error.h"

namespace depbloom::data::detail {
namespace {

inline bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

inline std::string_view trim_blanks(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_blank(s[b])) ++b;
  while (e > b && is_blank(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Most ids and many timestamps are short runs of digits; this path skips from_chars'
// generality for them. 15 digits stay below 2^53, so the value is exact as a double too.
bool short_digits(std::string_view f, uint64_t& value) {
  if (f.empty() || f.size() > 15) return false;
  uint64_t v = 0;
  for (char c : f) {
    const unsigned d = static_cast<unsigned>(c - '0');
    if (d > 9) return false;
    v = v * 10 + d;
  }
  value = v;
  return true;
}

// One data line being parsed: where it is, for messages.
struct Row {
  const std::string& file;
  int64_t line;
  std::string_view text;

  [[noreturn]] void fail(const std::string& what) const { fail_at(file, line, text, what); }

  int64_t integer(std::string_view f, const char* column) const {
    uint64_t digits = 0;
    if (short_digits(f, digits)) return static_cast<int64_t>(digits);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec == std::errc() && end == f.data() + f.size()) return v;
    if (ec == std::errc::result_out_of_range) {
      fail(fmt::format("{} '{}' overflows a 64-bit integer", column, excerpt(f)));
    }
    if (f.empty()) fail(fmt::format("{} is empty", column));
    fail(fmt::format("{} '{}' is not an integer", column, excerpt(f)));
  }

  int64_t node_id(std::string_view f, const char* column) const {
    int64_t v = integer(f, column);
    if (v < 0) fail(fmt::format("negative node id '{}' in {}", excerpt(f), column));
    return v;
  }

  double number(std::string_view f, const char* column) const {
    uint64_t digits = 0;
    if (short_digits(f, digits)) return static_cast<double>(digits);
    double v = 0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec == std::errc::result_out_of_range && end == f.data() + f.size()) {
      // Overflow or underflow: strtod tells which (inf or a tiny value).
      std::string copy(f);
      v = std::strtod(copy.c_str(), nullptr);
    } else if (ec != std::errc() || end != f.data() + f.size()) {
      if (f.empty()) fail(fmt::format("{} is empty", column));
      fail(fmt::format("{} '{}' is not a number", column, excerpt(f)));
    }
    if (!std::isfinite(v)) fail(fmt::format("{} '{}' is not finite", column, excerpt(f)));
    return v;
  }

  int32_t label(std::string_view f) const {
    double v = number(f, "label");
    if (v != std::floor(v) || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max()) {
      fail(fmt::format("label '{}' is not an integer", excerpt(f)));
    }
    return static_cast<int32_t>(v);
  }
};

// Rows in `text` from the mean length of its first 256 lines, plus 10%: most files then
// need no reallocation, and files with long feature rows do not reserve far too much.
size_t estimate_rows(std::string_view text) {
  const size_t sample = std::min<size_t>(text.size(), 1 << 16);
  size_t lines = 0, scanned = 0;
  for (; scanned < sample && lines < 256; ++scanned) lines += text[scanned] == '\n';
  const size_t mean = std::max<size_t>(8, scanned / std::max<size_t>(lines, 1));
  return text.size() / mean + text.size() / mean / 10 + 16;
}

}  // namespace

LineScanner::LineScanner(std::string_view text) : text_(text) {
  if (text_.size() >= 3 && text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
}

bool LineScanner::next(std::string_view& line) {
  if (pos_ >= text_.size()) return false;
  const char* start = text_.data() + pos_;
  const size_t left = text_.size() - pos_;
  const void* newline = std::memchr(start, '\n', left);
  size_t length = newline ? static_cast<size_t>(static_cast<const char*>(newline) - start) : left;
  pos_ += length + (newline ? 1 : 0);
  ++line_number_;
  if (length > 0 && start[length - 1] == '\r') --length;
  line = std::string_view(start, length);
  return true;
}

std::string_view trim(std::string_view s) {
  return trim_blanks(s);
}

void split_fields(std::string_view line, char delimiter, std::vector<std::string_view>& fields) {
  fields.clear();
  const char* p = line.data();
  const char* end = p + line.size();
  if (delimiter == ' ') {
    while (true) {
      while (p < end && is_blank(*p)) ++p;
      if (p == end) return;
      const char* start = p;
      while (p < end && !is_blank(*p)) ++p;
      fields.emplace_back(start, static_cast<size_t>(p - start));
    }
  }
  while (true) {
    const char* start = p;
    while (p < end && *p != delimiter) ++p;
    fields.push_back(trim_blanks(std::string_view(start, static_cast<size_t>(p - start))));
    if (p == end) return;
    ++p;
  }
}

bool first_content_line(std::string_view text, char comment, std::string_view& line,
                        int64_t& line_number) {
  LineScanner lines(text);
  std::string_view l;
  while (lines.next(l)) {
    std::string_view t = trim(l);
    if (t.empty() || (comment != 0 && t[0] == comment)) continue;
    line = l;
    line_number = lines.line_number();
    return true;
  }
  return false;
}

bool looks_numeric(std::string_view field) {
  double v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  return !field.empty() && end == field.data() + field.size() &&
         (ec == std::errc() || ec == std::errc::result_out_of_range);
}

std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 60;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    out += (c >= 32 && c < 127) ? static_cast<char>(c) : (c == '\t' ? ' ' : '?');
  }
  if (text.size() > kMax) out += "...";
  return out;
}

void fail_at(const std::string& file, int64_t line, std::string_view text,
             const std::string& what) {
  DB_THROW(data, "{}:{}: {}: `{}`", file, line, what, excerpt(text));
}

namespace {

// Blank and comment lines; the common data line is decided by its first byte.
bool skipped_line(std::string_view line, char comment) {
  if (!line.empty() && !is_blank(line[0]) && line[0] != comment) return false;
  std::string_view content = trim_blanks(line);
  return content.empty() || (comment != 0 && content[0] == comment);
}

// Fields a row needs for the plan's columns. Open-ended features may be absent (width 0),
// so they need no field of their own.
int fields_needed(const ColumnPlan& plan) {
  const bool open_features = plan.feature_begin >= 0 && plan.feature_end < 0;
  return std::max({plan.src, plan.dst, plan.time, plan.label, plan.split, plan.feature_row,
                   plan.feature_end - 1,
                   open_features ? plan.feature_begin - 1 : plan.feature_begin}) +
         1;
}

// A row too short for the plan. With config-named columns (csv) the message names the key
// of the column furthest past the row's end.
[[noreturn]] void fail_short_row(const Row& row, const ColumnPlan& plan, int n, int needed) {
  if (plan.column_key_prefix == nullptr)
    row.fail(fmt::format("expected at least {} fields, found {}", needed, n));
  const std::pair<const char*, int> columns[] = {
      {"src", plan.src + 1},     {"dst", plan.dst + 1},     {"time", plan.time + 1},
      {"label", plan.label + 1}, {"split", plan.split + 1}, {"first_feature", plan.feature_begin}};
  const auto* worst = &columns[0];
  for (const auto& c : columns)
    if (c.second > worst->second) worst = &c;
  const int column =
      worst->first == std::string_view("first_feature") ? worst->second : worst->second - 1;
  row.fail(fmt::format("{}{} is column {} (0-based), but the line has {} fields",
                       plan.column_key_prefix, worst->first, column, n));
}

// One data row's fields into raw; `width` edge features from plan.feature_begin.
void parse_row(const Row& row, const std::vector<std::string_view>& fields, const ColumnPlan& plan,
               int64_t width, RawEvents& raw) {
  raw.src.push_back(row.node_id(fields[plan.src], "src"));
  raw.dst.push_back(row.node_id(fields[plan.dst], "dst"));
  raw.ts.push_back(row.number(fields[plan.time], "timestamp"));
  raw.line.push_back(row.line);
  if (plan.label >= 0) raw.label.push_back(row.label(fields[plan.label]));
  if (plan.split >= 0) {
    int64_t s = row.integer(fields[plan.split], "split");
    if (s < 0 || s > 2) {
      row.fail(fmt::format("split '{}' must be 0 (train), 1 (val) or 2 (test)",
                           excerpt(fields[plan.split])));
    }
    raw.split.push_back(static_cast<int8_t>(s));
  }
  if (plan.feature_row >= 0) {
    int64_t r = row.integer(fields[plan.feature_row], "idx");
    if (r < 0) row.fail(fmt::format("negative feature row idx '{}'", r));
    raw.feature_row.push_back(r);
  }
  for (int64_t k = 0; k < width; ++k) {
    std::string_view f = fields[plan.feature_begin + k];
    const float v = static_cast<float>(row.number(f, "edge feature"));
    if (!std::isfinite(v)) row.fail(fmt::format("edge feature '{}' overflows float32", excerpt(f)));
    raw.edge_feat.push_back(v);
  }
}

}  // namespace

RawEvents parse_delimited(std::string_view text, const std::string& file, const ColumnPlan& plan) {
  RawEvents raw;
  raw.file = file;
  raw.two_id_spaces = plan.two_id_spaces;
  if (text.empty()) DB_THROW(data, "{}: the file is empty", file);

  const bool open_features = plan.feature_begin >= 0 && plan.feature_end < 0;
  const int needed = fields_needed(plan);
  int64_t width = plan.feature_begin < 0 ? 0 : plan.feature_end - plan.feature_begin;
  int64_t width_line = 0;  // line that fixed an open feature width, for messages

  const size_t guess = estimate_rows(text);
  raw.src.reserve(guess);
  raw.dst.reserve(guess);
  raw.ts.reserve(guess);
  raw.line.reserve(guess);

  LineScanner lines(text);
  std::vector<std::string_view> fields;
  std::string_view line;
  bool header_pending = plan.header;
  while (lines.next(line)) {
    if (skipped_line(line, plan.comment)) continue;
    const Row row{file, lines.line_number(), line};
    split_fields(line, plan.delimiter, fields);
    if (header_pending) {
      header_pending = false;
      if (looks_numeric(fields[0])) {
        row.fail(fmt::format(
            "this line looks like data, but the {} format starts with a header line", plan.format));
      }
      continue;
    }
    const int n = static_cast<int>(fields.size());
    if (plan.fixed_fields >= 0 && n != plan.fixed_fields) {
      row.fail(fmt::format("expected {} fields, found {}", plan.fixed_fields, n));
    }
    if (n < needed) fail_short_row(row, plan, n, needed);
    if (open_features) {
      const int64_t here = n - plan.feature_begin;
      if (raw.src.empty()) {
        width = here;
        width_line = row.line;
        raw.edge_feat.reserve(guess * static_cast<size_t>(width));
      } else if (here != width) {
        row.fail(fmt::format("{} edge features, but line {} has {}", here, width_line, width));
      }
    }
    parse_row(row, fields, plan, width, raw);
  }
  if (raw.src.empty()) DB_THROW(data, "{}: the file holds no events", file);
  raw.edge_dim = width;
  return raw;
}

}  // namespace depbloom::data::detail
