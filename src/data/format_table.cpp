// The table of data formats, with each format's detection rules, folder convention and
// stream name, and what reads the table by name: detection (auto), dispatch to a format's
// column plan (the plans are in text_formats.cpp) and data.format's choices.
#include "format_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "depbloom/core/error.h"
#include "text_formats.h"

namespace depbloom::data {
namespace detail {
namespace {

namespace fs = std::filesystem;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The names TGN's and KONECT's files go by; detection and folders both read them.
bool is_tgn_file_name(std::string_view base) {
  return base.size() > 7 && starts_with(base, "ml_") && base.substr(base.size() - 4) == ".csv";
}
bool is_konect_file_name(std::string_view base) {
  return starts_with(base, "out.");
}

bool has(const std::vector<std::string_view>& fields, std::string_view name) {
  return std::find(fields.begin(), fields.end(), name) != fields.end();
}
bool numbers(const FileHead& h, size_t count) {
  return h.delimiter == ' ' && h.fields.size() == count &&
         std::all_of(h.fields.begin(), h.fields.end(), looks_numeric);
}

bool tgn_file(const FileHead& h) {
  return is_tgn_file_name(h.base);
}
bool tgl_file(const FileHead& h) {
  return h.base == "edges.csv";
}
bool konect_file(const FileHead& h) {
  return is_konect_file_name(h.base);
}
bool percent_marker(const FileHead& h) {
  return starts_with(h.line, "%");
}
bool hash_marker(const FileHead& h) {
  return starts_with(h.line, "#");
}
bool tgn_header(const FileHead& h) {
  return h.delimiter == ',' && h.fields[0].empty() && has(h.fields, "u") && has(h.fields, "i") &&
         has(h.fields, "ts");
}
bool tgl_header(const FileHead& h) {
  return h.delimiter == ',' && has(h.fields, "src") && has(h.fields, "dst") &&
         has(h.fields, "time");
}
// Any other comma-separated first line that is not data is taken for JODIE's header.
bool comma_header(const FileHead& h) {
  return h.delimiter == ',' && !looks_numeric(h.fields[0]);
}
bool three_numbers(const FileHead& h) {
  return numbers(h, 3);
}
bool four_numbers(const FileHead& h) {
  return numbers(h, 4);
}

std::vector<fs::path> named(const std::vector<fs::path>& entries,
                            bool (*matches)(std::string_view)) {
  std::vector<fs::path> out;
  for (const fs::path& p : entries)
    if (matches(p.filename().string())) out.push_back(p);
  return out;
}

// Several TGN triples in one folder would make the choice arbitrary: the user names one.
std::string tgn_events_in(const fs::path& dir, const std::vector<fs::path>& entries) {
  const std::vector<fs::path> files = named(entries, is_tgn_file_name);
  if (files.size() > 1) {
    DB_THROW(data, "{}: holds {} ml_*.csv files; name the one to load", dir.string(), files.size());
  }
  return files.empty() ? std::string() : files[0].string();
}
std::string tgl_events_in(const fs::path& dir, const std::vector<fs::path>&) {
  std::error_code ec;
  const fs::path p = dir / "edges.csv";
  return fs::is_regular_file(p, ec) ? p.string() : std::string();
}
// KONECT folders hold README and meta files beside the one out.* file.
std::string konect_events_in(const fs::path&, const std::vector<fs::path>& entries) {
  const std::vector<fs::path> files = named(entries, is_konect_file_name);
  return files.size() == 1 ? files[0].string() : std::string();
}

// KONECT names its files out.<name>, whatever format the user reads them as.
std::string plain_name(const fs::path& file) {
  const std::string base = file.filename().string();
  if (is_konect_file_name(base)) return base.substr(4);
  return file.stem().string();
}
std::string tgn_name(const fs::path& file) {
  const std::string base = file.filename().string();
  if (starts_with(base, "ml_")) return base.substr(3, base.size() - 7);
  return plain_name(file);
}
// Every TGL dataset's events file is edges.csv: its folder names the dataset.
std::string tgl_name(const fs::path& file) {
  return file.parent_path().filename().string();
}

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Match {
  const char* format;
  const char* reason;
};

// The first rule of `clue` that `head` satisfies, in table order.
std::optional<Match> first_match(Clue clue, const FileHead& head) {
  for (const FormatEntry& e : format_table())
    for (const FormatRule& rule : e.detection)
      if (rule.clue == clue && rule.holds(head)) return Match{e.name, rule.reason};
  return std::nullopt;
}

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  for (const FormatEntry& e : format_table()) names.emplace_back(e.name);
  return names;
}

}  // namespace

const std::vector<FormatEntry>& format_table() {
  static const std::vector<FormatEntry> table = {
      {"jodie",
       "JODIE CSV",
       {{Clue::shape, &comma_header, "comma-separated with a header line"}},
       {},
       &plain_name,
       &jodie_plan,
       {}},
      {"tgn",
       "TGN preprocessed triple",
       {{Clue::file_name, &tgn_file, "file name ml_*.csv"},
        {Clue::header, &tgn_header, "header ,u,i,ts,..."}},
       {"ml_<name>.csv", &tgn_events_in},
       &tgn_name,
       &tgn_plan,
       {"{}.npy", "{}_node.npy", true}},
      {"tgl",
       "TGL",
       {{Clue::file_name, &tgl_file, "file name edges.csv"},
        {Clue::header, &tgl_header, "header with src,dst,time"}},
       {"edges.csv", &tgl_events_in},
       &tgl_name,
       &tgl_plan,
       {"edge_features.npy", "node_features.npy", false}},
      {"snap",
       "SNAP temporal text",
       {{Clue::marker, &hash_marker, "first line starts with #"},
        {Clue::shape, &three_numbers, "3 blank-separated numbers per line"}},
       {},
       &plain_name,
       &snap_plan,
       {}},
      {"konect",
       "KONECT",
       {{Clue::file_name, &konect_file, "file name out.*"},
        {Clue::marker, &percent_marker, "first line starts with %"},
        {Clue::shape, &four_numbers, "4 blank-separated numbers per line"}},
       {"out.*", &konect_events_in},
       &plain_name,
       &konect_plan,
       {}},
      {"csv", "Generic CSV", {}, {}, &plain_name, &csv_plan, {}},
  };
  return table;
}

const FormatEntry& format_entry(const std::string& format) {
  for (const FormatEntry& e : format_table())
    if (format == e.name) return e;
  DB_THROW(config, "data.format: unknown format '{}' ({})", format,
           fmt::join(format_choices(), ", "));
}

RawEvents parse_text_format(std::string_view text, const std::string& file,
                            const std::string& format, const LoadOptions& options) {
  return parse_delimited(text, file, format_entry(format).plan(text, file, options));
}

DetectedFormat guess_format(const std::string& file, std::string_view head) {
  const std::string base = base_name(file);
  FileHead seen;
  seen.base = base;
  if (auto m = first_match(Clue::file_name, seen)) return {m->format, file, m->reason};

  std::string_view line;
  int64_t line_number = 0;
  if (head.empty()) DB_THROW(data, "{}: the file is empty", file);
  if (!first_content_line(head, 0, line, line_number)) {
    DB_THROW(data, "{}: the file holds no events", file);
  }
  seen.line = trim(line);
  seen.delimiter = seen.line.find(',') != std::string_view::npos ? ',' : ' ';
  split_fields(seen.line, seen.delimiter, seen.fields);
  for (Clue clue : {Clue::marker, Clue::header, Clue::shape})
    if (auto m = first_match(clue, seen)) return {m->format, file, m->reason};
  if (seen.delimiter == ',') {
    fail_at(file, line_number, line,
            "comma-separated rows without a header: set data.format: csv and data.columns");
  }
  fail_at(file, line_number, line,
          fmt::format("cannot tell the format of this file; set data.format ({})",
                      fmt::join(format_names(), ", ")));
}

}  // namespace detail

std::vector<std::string> format_choices() {
  std::vector<std::string> choices = {"auto"};
  for (const detail::FormatEntry& e : detail::format_table()) choices.emplace_back(e.name);
  return choices;
}

}  // namespace depbloom::data
