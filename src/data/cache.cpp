// The event cache: src/dst/ts/... as .npy files (numpy.load reads them, mmap_mode='r'
// works) plus meta.json with the sizes and the key of the inputs it was built from.
// Publishing is a rename of a complete folder, so readers see an old cache or a new one.
#include "cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"

namespace depbloom::data::detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kCacheFormat = "depbloom-event-cache";
constexpr int kCacheVersion = 1;

// Makes temporary names unique per process and per write (threads share a pid).
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.{}", ::getpid(), counter.fetch_add(1));
}

struct DirFd {
  int fd;
  ~DirFd() {
    if (fd >= 0) ::close(fd);
  }
};

json meta_of(const EventStream& s, const json& key) {
  return json{{"format", kCacheFormat},
              {"version", kCacheVersion},
              {"name", s.name},
              {"source", s.source},
              {"num_events", s.num_events()},
              {"num_nodes", s.num_nodes},
              {"num_users", s.num_users},
              {"bipartite", s.bipartite},
              {"edge_dim", s.edge_dim},
              {"node_dim", s.node_dim},
              {"has_label", !s.label.empty()},
              {"has_split", !s.split.empty()},
              {"has_original_id", !s.original_id.empty()},
              {"key", key}};
}

void write_arrays(const EventStream& s, const std::string& dir, const json& meta) {
  const int64_t e = s.num_events(), n = s.num_nodes;
  auto at = [&](const char* name) { return dir + "/" + name; };
  write_npy(at("src.npy"), NpyDtype::i4, {e}, s.src.data());
  write_npy(at("dst.npy"), NpyDtype::i4, {e}, s.dst.data());
  write_npy(at("ts.npy"), NpyDtype::f8, {e}, s.ts.data());
  write_npy(at("event_id.npy"), NpyDtype::i8, {e}, s.event_id.data());
  if (!s.original_id.empty())
    write_npy(at("original_id.npy"), NpyDtype::i8, {n}, s.original_id.data());
  if (s.edge_dim > 0)
    write_npy(at("edge_feat.npy"), NpyDtype::f4, {e, s.edge_dim}, s.edge_feat.data());
  if (s.node_dim > 0)
    write_npy(at("node_feat.npy"), NpyDtype::f4, {n, s.node_dim}, s.node_feat.data());
  if (!s.label.empty()) write_npy(at("label.npy"), NpyDtype::i4, {e}, s.label.data());
  if (!s.split.empty()) write_npy(at("split.npy"), NpyDtype::i1, {e}, s.split.data());
  // meta.json last: a folder without it is never mistaken for a complete cache.
  std::ofstream out(at("meta.json"));
  out << meta.dump(2) << '\n';
  out.close();
  if (!out) DB_THROW(data, "{}: cannot write meta.json", dir);
}

bool holds_key(const std::string& dir, const json& key) {
  std::ifstream in(dir + "/meta.json");
  if (!in) return false;
  json meta = json::parse(in, nullptr, false);
  return !meta.is_discarded() && meta.is_object() && meta.contains("key") && meta["key"] == key;
}

// Moves the finished folder `tmp` to `dir`, replacing a stale `dir` but keeping a fresh one
// that another process published meanwhile.
void publish(const std::string& tmp, const std::string& dir, const json& key) {
  std::error_code ec;
  std::vector<std::string> replaced;
  // Every way out removes the folders this call moved aside, including the one where
  // another process published a fresh cache after we moved the stale one away.
  auto drop_replaced = [&] {
    for (const auto& old : replaced) fs::remove_all(old, ec);
  };
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (::rename(tmp.c_str(), dir.c_str()) == 0) {
      drop_replaced();
      return;
    }
    const int err = errno;
    if (err != ENOTEMPTY && err != EEXIST) {
      fs::remove_all(tmp, ec);
      drop_replaced();
      DB_THROW(data, "{}: cannot publish the cache: {}", dir, std::strerror(err));
    }
    if (!key.is_null() && holds_key(dir, key)) {
      fs::remove_all(tmp, ec);
      drop_replaced();
      return;
    }
    std::string old = dir + ".old." + unique_suffix();
    if (::rename(dir.c_str(), old.c_str()) == 0) replaced.push_back(old);
  }
  fs::remove_all(tmp, ec);
  drop_replaced();
  DB_THROW(data, "{}: cannot publish the cache: the folder keeps changing", dir);
}

// Opens `name` in the cache folder and checks its dtype and shape against meta.json.
NpyArray open_array(int dir_fd, const char* name, NpyDtype dtype, std::vector<int64_t> shape) {
  NpyArray a = NpyArray::open(name, dir_fd);
  if (a.dtype() != dtype || a.shape() != shape) {
    DB_THROW(data, "{}: dtype {} shape ({}), meta.json says {} ({})", name, npy_descr(a.dtype()),
             fmt::join(a.shape(), ", "), npy_descr(dtype), fmt::join(shape, ", "));
  }
  return a;
}

EventStream read_arrays(int fd, const json& meta) {
  EventStream s;
  const int64_t e = meta.at("num_events").get<int64_t>();
  const int64_t n = meta.at("num_nodes").get<int64_t>();
  if (e < 0 || n < 0 || n > INT32_MAX) DB_THROW(data, "meta.json has bad sizes");
  s.name = meta.at("name").get<std::string>();
  s.source = meta.at("source").get<std::string>();
  s.num_nodes = static_cast<int32_t>(n);
  s.num_users = meta.at("num_users").get<int32_t>();
  s.bipartite = meta.at("bipartite").get<bool>();
  s.edge_dim = meta.at("edge_dim").get<int64_t>();
  s.node_dim = meta.at("node_dim").get<int64_t>();
  s.src = open_array(fd, "src.npy", NpyDtype::i4, {e}).to_int32();
  s.dst = open_array(fd, "dst.npy", NpyDtype::i4, {e}).to_int32();
  s.ts = open_array(fd, "ts.npy", NpyDtype::f8, {e}).to_float64();
  s.event_id = open_array(fd, "event_id.npy", NpyDtype::i8, {e}).to_int64();
  if (meta.at("has_original_id").get<bool>()) {
    s.original_id = open_array(fd, "original_id.npy", NpyDtype::i8, {n}).to_int64();
  }
  if (s.edge_dim > 0) {
    s.edge_feat = open_array(fd, "edge_feat.npy", NpyDtype::f4, {e, s.edge_dim}).to_float32();
  }
  if (s.node_dim > 0) {
    s.node_feat = open_array(fd, "node_feat.npy", NpyDtype::f4, {n, s.node_dim}).to_float32();
  }
  if (meta.at("has_label").get<bool>()) {
    s.label = open_array(fd, "label.npy", NpyDtype::i4, {e}).to_int32();
  }
  if (meta.at("has_split").get<bool>()) {
    s.split = open_array(fd, "split.npy", NpyDtype::i1, {e}).to_int8();
  }
  check_event_stream(s);
  return s;
}

}  // namespace

void write_cache_folder(const EventStream& stream, const std::string& dir, const json& key) {
  check_event_stream(stream);
  std::error_code ec;
  const fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) DB_THROW(data, "{}: cannot create the cache folder: {}", parent.string(), ec.message());
  const std::string tmp = dir + ".tmp." + unique_suffix();
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) {
    DB_THROW(data, "{}: cannot create: {}", tmp, ec ? ec.message() : "it exists");
  }
  try {
    write_arrays(stream, tmp, meta_of(stream, key));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  publish(tmp, dir, key);
}

std::optional<EventStream> read_cache_folder(const std::string& dir, const json& key,
                                             std::string& stale) {
  DirFd folder{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (folder.fd < 0) {
    if (errno == ENOENT) {
      stale = "there is no cache yet";
      return std::nullopt;
    }
    DB_THROW(data, "{}: cannot open the cache folder: {}", dir, std::strerror(errno));
  }
  try {
    MappedFile meta_file("meta.json", folder.fd);
    json meta = json::parse(meta_file.view(), nullptr, false);
    if (meta.is_discarded() || !meta.is_object()) {
      DB_THROW(data, "meta.json is not a JSON object");
    }
    if (meta.value("format", "") != kCacheFormat || meta.value("version", 0) != kCacheVersion) {
      stale = "it was written by another cache format version";
      return std::nullopt;
    }
    if (!key.is_null() && meta.at("key") != key) {
      stale = "the source files or the loader options changed";
      return std::nullopt;
    }
    return read_arrays(folder.fd, meta);
  } catch (const json::exception& e) {
    DB_THROW(data, "{}: meta.json: {}", dir, e.what());
  } catch (const Error& e) {
    DB_THROW(data, "{}: {}", dir, e.message());
  }
}

}  // namespace depbloom::data::detail
