// The steps of `get`: reuse (the manifest's checksum), download into DIR/<name>.part
// (resumable), verify, unpack into a staging folder renamed into place, convert into the
// cache, record the manifest. A failed check removes what it staged; only a cut download's
// .part stays, so the next `get` resumes it.
#include "get.h"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "datasets.h"
#include "depbloom/cli/file_sha256.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "download.h"
#include "unpack.h"

namespace depbloom::tools {
namespace {

namespace fs = std::filesystem;

struct Places {
  fs::path folder;    // DIR/<name>: the published dataset
  fs::path events;    // the events file in it
  fs::path manifest;  // folder/manifest.json
  fs::path part;      // DIR/<name>.part: the download in progress
  fs::path stage;     // DIR/.<name>.tmp.<pid>: the folder being built
};

Places places(const Dataset& d, const std::string& dir) {
  Places p;
  p.folder = fs::path(dir) / d.name;
  p.events = p.folder / d.file;
  p.manifest = p.folder / "manifest.json";
  p.part = fs::path(dir) / (d.name + ".part");
  p.stage = fs::path(dir) / fmt::format(".{}.tmp.{}", d.name, getpid());
  return p;
}

void print_config_line(const Dataset& d, const fs::path& events) {
  if (d.format.empty()) {
    // TGB: the edge list is read as it is; the negatives need tools/tgb_negatives.py first.
    spdlog::info(
        "{}: unpacked, not converted; convert TGB's negatives with "
        "tools/tgb_negatives.py (docs/data.md)",
        events.string());
  }
  if (d.config.empty()) {
    fmt::print("build/depbloom-train --data {}\n", events.string());
  } else {
    fmt::print("build/depbloom-train --config {} --data {}\n", d.config, events.string());
  }
}

// The dataset is here when its manifest is; its events file must still hash as recorded.
bool reuse(const Dataset& d, const Places& p) {
  std::error_code ec;
  if (!fs::exists(p.manifest, ec)) {
    if (fs::exists(p.folder, ec))
      DB_THROW(data, "{}: exists but was not made by get (no manifest.json); use another --dir",
               p.folder.string());
    return false;
  }
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(std::ifstream(p.manifest));
  } catch (const nlohmann::json::exception& e) {
    DB_THROW(data, "{}: {}", p.manifest.string(), e.what());
  }
  const std::string recorded = m.value("file_sha256", "");
  const std::string now = cli::file_sha256(p.events.string());
  if (now != recorded)
    DB_THROW(data,
             "{}: sha256 {} differs from the first download's {} ({}); remove {} and get "
             "it again",
             p.events.string(), now, recorded, p.manifest.string(), p.folder.string());
  spdlog::info("{} is here: {} (sha256 as at its first download)", d.name, p.events.string());
  print_config_line(d, p.events);
  return true;
}

// The download's own checks: exact size and the publisher's checksum, when the table has them.
void check_download(const Dataset& d, const fs::path& file, const std::string& what,
                    const std::string& sha) {
  const auto bytes = static_cast<int64_t>(fs::file_size(file));
  if (d.bytes > 0 && bytes != d.bytes)
    DB_THROW(data, "{}: {} bytes, expected {}", what, bytes, d.bytes);
  if (!d.sha256.empty() && sha != d.sha256)
    DB_THROW(data, "{}: sha256 {} differs from the published {}", what, sha, d.sha256);
}

// The events file's first line must start as the publisher's does (a UTF-8 BOM is skipped).
void check_header(const Dataset& d, const fs::path& events, const std::string& what) {
  if (d.header.empty()) return;
  std::ifstream in(events, std::ios::binary);
  std::string line;
  std::getline(in, line);
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  if (line.rfind(d.header, 0) != 0)
    DB_THROW(data, "{}: {}:1: expected a line starting `{}`, found `{}`", what, d.file, d.header,
             line.substr(0, 60));
}

// A file no loader reads yet (TGB's edge lists): its rows, the non-empty lines after the
// first (its header).
int64_t rows_after_header(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string line;
  int64_t rows = 0;
  for (bool header = true; std::getline(in, line); header = false)
    rows += !header && !line.empty() && line != "\r";
  return rows;
}

// Loads the published file once with the options a config uses, which writes the cache
// that training then reads; the event count is the last check (the row count for a file
// no loader reads).
void convert(const Dataset& d, const Places& p, const std::string& what) {
  if (d.format.empty()) {
    const int64_t rows = d.events > 0 ? rows_after_header(p.events) : 0;
    if (rows != d.events)
      DB_THROW(data, "{}: {} holds {} rows after its header, expected {}", what, d.file, rows,
               d.events);
    return;
  }
  data::LoadOptions options;
  const data::EventStream s = data::load_events(p.events.string(), options);
  if (d.events > 0 && s.num_events() != d.events)
    DB_THROW(data, "{}: {} holds {} events, expected {}", what, d.file, s.num_events(), d.events);
  spdlog::info("{}: {} events, {} nodes, {} edge features; cached beside it", d.name,
               s.num_events(), s.num_nodes, s.edge_dim);
}

void write_manifest(const Dataset& d, const Places& p, const std::string& what,
                    const std::string& download_sha) {
  nlohmann::json m = {{"name", d.name},
                      {"source", what},
                      {"download_sha256", download_sha},
                      {"file", d.file},
                      {"file_sha256", cli::file_sha256(p.events.string())}};
  const fs::path tmp = p.manifest.string() + fmt::format(".tmp.{}", getpid());
  std::ofstream(tmp) << m.dump(2) << "\n";
  fs::rename(tmp, p.manifest);
}

// Stage, check, publish: the folder appears whole or not at all.
void install(const Dataset& d, const Places& p, const fs::path& download, const std::string& what) {
  std::error_code ec;
  const std::string sha = cli::file_sha256(download.string());
  check_download(d, download, what, sha);
  fs::remove_all(p.stage, ec);
  try {
    unpack(download, d.unpack, p.stage, d.file, what);
    check_header(d, p.stage / d.file, what);
    fs::rename(p.stage, p.folder);
  } catch (...) {
    fs::remove_all(p.stage, ec);
    throw;
  }
  try {
    convert(d, p, what);
    write_manifest(d, p, what, sha);
  } catch (...) {
    fs::remove_all(p.folder, ec);
    throw;
  }
}

}  // namespace

void get_dataset(const GetOptions& o) {
  const Dataset& d = find_dataset(o.name);
  const Places p = places(d, o.dir);
  if (reuse(d, p)) return;
  fs::create_directories(o.dir);
  std::error_code ec;
  if (!o.from.empty()) {
    if (!fs::is_regular_file(o.from, ec)) DB_THROW(data, "{}: no such file", o.from);
    install(d, p, o.from, o.from);
  } else {
    spdlog::info("{}: downloading {}", d.name, d.url);
    const std::string hint = fmt::format(
        "without network, fetch it elsewhere and run `depbloom-data get {} --from FILE`", d.name);
    download(d.url, p.part, hint);
    try {
      install(d, p, p.part, d.url);
    } catch (const Error& e) {
      // A file that fails its checks is not resumed: the next get downloads afresh.
      if (e.kind() == ErrorKind::data) fs::remove(p.part, ec);
      throw;
    }
    fs::remove(p.part, ec);
  }
  spdlog::info("{}: ready in {}", d.name, p.folder.string());
  print_config_line(d, p.events);
}

void list_datasets(const std::string& dir) {
  fmt::print("{:<24} {:<10} {:<5} {:<7} {}\n", "name", "size", "here", "format", "publisher");
  for (const Dataset& d : dataset_table()) {
    std::error_code ec;
    const bool here = fs::exists(fs::path(dir) / d.name / "manifest.json", ec);
    fmt::print("{:<24} {:<10} {:<5} {:<7} {}\n", d.name, d.size, here ? "yes" : "no",
               d.format.empty() ? "-" : d.format, d.publisher);
  }
}

}  // namespace depbloom::tools
