// NameTable: the one list of a value type's text names (an enum's, or a flag's two
// spellings), read by config parsing, dumps and messages alike. Not a registry: each
// table is a constant beside the type it names.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace depbloom {

template <class T>
class NameTable {
 public:
  NameTable(std::initializer_list<std::pair<T, const char*>> entries) : entries_(entries) {}

  // The name of `value`; nullptr when the table does not list it.
  const char* name(T value) const {
    for (const auto& [v, n] : entries_)
      if (v == value) return n;
    return nullptr;
  }
  std::optional<T> parse(std::string_view text) const {
    for (const auto& [v, n] : entries_)
      if (text == n) return v;
    return std::nullopt;
  }
  // In table order: what a message lists as the allowed values.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.emplace_back(entry.second);
    return out;
  }

 private:
  std::vector<std::pair<T, const char*>> entries_;
};

}  // namespace depbloom
