// load_events: resolves the path and format, uses the cache when it matches the source
// and options, else parses the text, attaches feature files and builds the stream.
#include "depbloom/data/loader.h"

#include <filesystem>
#include <vector>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cache.h"
#include "depbloom/core/error.h"
#include "depbloom/core/timer.h"
#include "depbloom/data/mapped_file.h"
#include "depbloom/data/synth.h"
#include "depbloom/data/tgb.h"
#include "event_builder.h"
#include "format_table.h"

namespace depbloom::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What one load reads: the events file, its format and the feature files that go with it.
struct Inputs {
  DetectedFormat detected;
  std::string edge_features;
  std::string node_features;
  std::string name;
};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? path : p.string();
}

// Every entry of the folder, listed once for all the formats' discovery.
std::vector<fs::path> folder_entries(const fs::path& dir) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) entries.push_back(entry.path());
  if (ec) DB_THROW(data, "{}: cannot list the folder: {}", dir.string(), ec.message());
  return entries;
}

// "a, b or c": what a folder may hold, from the table.
std::string folder_patterns() {
  std::vector<std::string> patterns;
  for (const detail::FormatEntry& e : detail::format_table())
    if (e.discovery.find != nullptr) patterns.emplace_back(e.discovery.pattern);
  std::string out = patterns.back();
  if (patterns.size() > 1) {
    patterns.pop_back();
    out = fmt::format("{} or {}", fmt::join(patterns, ", "), out);
  }
  return out;
}

// The events file of a folder: the first format, in table order, whose convention names one.
std::string file_in_folder(const fs::path& dir, const std::string& format) {
  const std::vector<fs::path> entries = folder_entries(dir);
  for (const detail::FormatEntry& e : detail::format_table()) {
    if ((format != "auto" && format != e.name) || e.discovery.find == nullptr) continue;
    std::string file = e.discovery.find(dir, entries);
    if (!file.empty()) return file;
  }
  DB_THROW(data, "{}: holds no events file for format {} ({})", dir.string(), format,
           folder_patterns());
}

std::string beside(const fs::path& file, const std::string& name) {
  fs::path p = file.parent_path() / name;
  return is_file(p) ? p.string() : std::string();
}

// The format's own feature files beside the events file, where the options name none.
void add_feature_files(Inputs& in, const detail::FeatureFiles& own) {
  const fs::path events(in.detected.file);
  const std::string stem = events.stem().string();
  if (own.edges != nullptr && in.edge_features.empty()) {
    const std::string edges = fmt::format(fmt::runtime(own.edges), stem);
    in.edge_features = beside(events, edges);
    if (own.warn_without_edges && in.edge_features.empty()) {
      spdlog::warn("{}: no {} beside it; loading without edge features", in.detected.file, edges);
    }
  }
  if (own.nodes != nullptr && in.node_features.empty())
    in.node_features = beside(events, fmt::format(fmt::runtime(own.nodes), stem));
}

Inputs resolve(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    const std::string make = synth_command_for(path);
    if (!make.empty()) DB_THROW(data, "{}: no such file or folder; make it with `{}`", path, make);
    DB_THROW(data, "{}: no such file or folder", path);
  }
  if (options.format != "auto") detail::format_entry(options.format);  // unknown: config error
  Inputs in;
  const std::string file = fs::is_directory(path, ec) ? file_in_folder(path, options.format) : path;
  if (options.format == "auto") {
    MappedFile mapped(file);
    const size_t head = std::min<size_t>(mapped.size(), 1 << 16);
    in.detected = detail::guess_format(file, std::string_view(mapped.data(), head));
  } else {
    in.detected = {options.format, file, "data.format"};
  }
  const detail::FormatEntry& format = detail::format_entry(in.detected.format);
  in.name = format.stream_name(fs::path(file));
  in.edge_features = options.edge_features;
  in.node_features = options.node_features;
  add_feature_files(in, format.features);
  return in;
}

// The options that change what a load produces, as one canonical string.
std::string options_text(const LoadOptions& o) {
  const ColumnMap& c = o.columns;
  return fmt::format(
      "format={};drop_self_loops={};weight_as_feature={};columns={},{},{},{},{},{},{},{},{},{};"
      "edge_features={};node_features={}",
      o.format, o.drop_self_loops, o.weight_as_feature, c.src, c.dst, c.time, c.label,
      c.first_feature, c.header, static_cast<int>(c.delimiter), c.bipartite, c.split,
      static_cast<int>(c.comment), o.edge_features.empty() ? "" : absolute(o.edge_features),
      o.node_features.empty() ? "" : absolute(o.node_features));
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

json cache_key(const Inputs& in, const LoadOptions& options) {
  json inputs = json::array();
  for (const std::string& f : {in.detected.file, in.edge_features, in.node_features}) {
    if (f.empty()) continue;
    FileStamp st = file_stamp(f);
    inputs.push_back({{"path", absolute(f)}, {"size", st.size}, {"mtime_ns", st.mtime_ns}});
  }
  return json{{"options", options_text(options)},
              {"options_hash", fmt::format("{:016x}", fnv1a(options_text(options)))},
              {"format", in.detected.format},
              {"inputs", inputs}};
}

EventStream parse_inputs(const Inputs& in, const LoadOptions& options) {
  const std::string& file = in.detected.file;
  MappedFile text(file);
  detail::RawEvents raw = detail::parse_text_format(text.view(), file, in.detected.format, options);
  if (!in.edge_features.empty()) {
    detail::attach_edge_features(raw,
                                 detail::read_feature_table(in.edge_features, "edge features"));
  }
  detail::FeatureTable nodes;
  if (!in.node_features.empty())
    nodes = detail::read_feature_table(in.node_features, "node features");
  EventStream s = detail::build_event_stream(std::move(raw), options.drop_self_loops, &nodes);
  s.name = in.name;
  return s;
}

std::string trimmed_dir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

DetectedFormat detect_format(const std::string& path) {
  LoadOptions options;
  return resolve(path, options).detected;
}

std::string cache_folder(const std::string& path, const LoadOptions& options) {
  const fs::path source(absolute(path));
  std::error_code ec;
  const bool folder = fs::is_directory(source, ec);
  fs::path dir = options.cache_dir.empty()
                     ? (folder ? source : source.parent_path()) / ".depbloom-cache"
                     : fs::path(options.cache_dir);
  const std::string id = source.string() + "|" + options_text(options);
  return (dir / fmt::format("{}.{:016x}", source.filename().string(), fnv1a(id))).string();
}

namespace {
EventStream load_stream(const std::string& path, const LoadOptions& options) {
  Stopwatch watch;
  std::error_code ec;
  if (fs::is_directory(path, ec) && is_file(fs::path(path) / "meta.json")) {
    EventStream s = read_event_cache(path);
    spdlog::info("data: loaded {} from the event cache folder {} in {:.1f} ms", s.name, path,
                 watch.seconds() * 1e3);
    return s;
  }
  const Inputs in = resolve(path, options);
  spdlog::info("data: {} is {} ({})", in.detected.file, in.detected.format, in.detected.reason);
  json key;
  std::string folder;
  if (options.use_cache) {
    folder = cache_folder(path, options);
    key = cache_key(in, options);
    std::string stale;
    try {
      if (auto cached = detail::read_cache_folder(folder, key, stale)) {
        spdlog::info("data: loaded {} from the cache {} in {:.1f} ms", in.name, folder,
                     watch.seconds() * 1e3);
        return std::move(*cached);
      }
      spdlog::info("data: building the cache {} ({})", folder, stale);
    } catch (const Error& e) {
      spdlog::warn("data: the cache is unreadable ({}); rebuilding it", e.message());
    }
  }
  EventStream s = parse_inputs(in, options);
  spdlog::info("data: {}: {} events, {} nodes{}, edge features {}, parsed in {:.1f} ms", in.name,
               s.num_events(), s.num_nodes,
               s.bipartite
                   ? fmt::format(" ({} users + {} items)", s.num_users, s.num_nodes - s.num_users)
                   : std::string(),
               s.edge_dim, watch.seconds() * 1e3);
  if (options.use_cache) {
    try {
      detail::write_cache_folder(s, folder, key);
    } catch (const Error& e) {
      spdlog::warn("data: cannot write the cache ({}); continuing without it", e.message());
    }
  }
  return s;
}
}  // namespace

// Whether the file numbers users and items apart (TGB then numbers items after users).
bool two_id_spaces(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec) && is_file(fs::path(path) / "meta.json")) return false;
  const std::string format = options.format == "auto" ? detect_format(path).format : options.format;
  return format == "jodie" || (format == "csv" && options.columns.bipartite);
}

EventStream load_events(const std::string& path, const LoadOptions& options) {
  EventStream s = load_stream(path, options);
  if (!options.tgb_negatives.empty())
    attach_tgb_negatives(s, options.tgb_negatives, two_id_spaces(path, options));
  return s;
}

EventStream parse_event_text(std::string_view text, const std::string& format,
                             const std::string& name, const LoadOptions& options) {
  detail::RawEvents raw = detail::parse_text_format(text, name, format, options);
  EventStream s = detail::build_event_stream(std::move(raw), options.drop_self_loops, nullptr);
  s.name = name;
  return s;
}

void write_event_cache(const EventStream& stream, const std::string& dir) {
  detail::write_cache_folder(stream, trimmed_dir(dir), json());
}

EventStream read_event_cache(const std::string& dir) {
  std::string missing;
  auto s = detail::read_cache_folder(trimmed_dir(dir), json(), missing);
  if (!s) DB_THROW(data, "{}: not an event cache ({})", dir, missing);
  return std::move(*s);
}

}  // namespace depbloom::data
