// Original id -> dense id: the loader numbers nodes by ascending original id (per id space
// for bipartite streams: users first, then items), so each space is a sorted run of
// original_id and a binary search finds an id.
#include "depbloom/cli/node_list.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "depbloom/core/error.h"

namespace depbloom::cli {
namespace {

std::string trimmed(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

// Dense id of `id` among nodes [lo, hi), or -1.
int32_t search(const data::EventStream& s, int32_t lo, int32_t hi, int64_t id) {
  if (s.original_id.empty()) return id >= lo && id < hi ? static_cast<int32_t>(id) : -1;
  const auto first = s.original_id.begin() + lo, last = s.original_id.begin() + hi;
  const auto at = std::lower_bound(first, last, id);
  return at != last && *at == id ? static_cast<int32_t>(at - s.original_id.begin()) : -1;
}

}  // namespace

int64_t original_id(const data::EventStream& stream, int32_t node) {
  return stream.original_id.empty() ? node : stream.original_id[static_cast<size_t>(node)];
}

int32_t find_node(const data::EventStream& stream, const std::string& text,
                  const std::string& where) {
  std::string id_text = trimmed(text);
  int space = -1;  // -1 either, 0 users, 1 items
  for (const auto& [prefix, which] : {std::pair<const char*, int>{"user:", 0}, {"item:", 1}}) {
    if (id_text.rfind(prefix, 0) != 0) continue;
    if (!stream.bipartite)
      DB_THROW(data, "{}: '{}': user:/item: name a side of a bipartite stream; {} is not one",
               where, id_text, stream.source);
    space = which;
    id_text = id_text.substr(std::strlen(prefix));
  }
  errno = 0;
  char* end = nullptr;
  const long long id = std::strtoll(id_text.c_str(), &end, 10);
  if (id_text.empty() || *end != '\0' || errno == ERANGE)
    DB_THROW(data, "{}: '{}' is not a node id (one integer id per line{})", where, trimmed(text),
             stream.bipartite ? ", or user:ID / item:ID" : "");
  if (!stream.bipartite) return search(stream, 0, stream.num_nodes, id);
  const int32_t user = space == 1 ? -1 : search(stream, 0, stream.num_users, id);
  const int32_t item = space == 0 ? -1 : search(stream, stream.num_users, stream.num_nodes, id);
  if (user >= 0 && item >= 0)
    DB_THROW(data, "{}: id {} is both a user and an item of {}: write user:{} or item:{}", where,
             id, stream.source, id, id);
  return std::max(user, item);
}

std::vector<int32_t> read_node_list(const data::EventStream& stream, const std::string& path) {
  std::ifstream in(path);
  if (!in) DB_THROW(data, "{}: cannot read: {}", path, std::strerror(errno));
  std::vector<int32_t> nodes;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (trimmed(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    const int32_t node = find_node(stream, line, where);
    if (node < 0)
      DB_THROW(data, "{}: no node has id {} in {}", where, trimmed(line), stream.source);
    nodes.push_back(node);
  }
  return nodes;
}

}  // namespace depbloom::cli
