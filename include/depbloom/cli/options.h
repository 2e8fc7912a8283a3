// The option registry: every config key declared once with its type, default and one-line
// meaning; YAML files fill it, `--set key=value` overrides it, and the effective config is
// dumped as canonical YAML (with a stable hash) and rendered as the docs table.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "depbloom/core/error.h"

namespace depbloom::cli {

enum class OptionType { boolean, int64, float64, string, enumeration, int_list };

// Enum values are held as their string; int lists hold per-layer / per-hop values.
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

struct OptionSpec {
  std::string key;  // dotted: "train.batch_size"
  OptionType type = OptionType::string;
  OptionValue default_value;
  std::vector<std::string> choices;  // enumeration only
  std::string help;                  // one line
  // Smallest accepted value of an int or of each element of an int list.
  int64_t min = std::numeric_limits<int64_t>::min();
};

const char* type_name(OptionType type);

class OptionRegistry {
 public:
  // Declaring a key twice, a key that is also a section, or an enum default outside its
  // choices is a programming error (runtime).
  void declare(OptionSpec spec);
  void add_bool(const std::string& key, bool def, const std::string& help);
  void add_int(const std::string& key, int64_t def, const std::string& help,
               int64_t min = std::numeric_limits<int64_t>::min());
  void add_double(const std::string& key, double def, const std::string& help);
  void add_string(const std::string& key, const std::string& def, const std::string& help);
  void add_enum(const std::string& key, const std::string& def, std::vector<std::string> choices,
                const std::string& help);
  void add_int_list(const std::string& key, std::vector<int64_t> def, const std::string& help,
                    int64_t min = std::numeric_limits<int64_t>::min());

  bool has(const std::string& key) const { return index_.count(key) != 0; }
  const OptionSpec& spec(const std::string& key) const;
  const std::vector<OptionSpec>& specs() const { return specs_; }  // declaration order
  const OptionValue& value(const std::string& key) const;

  // Typed read; an unknown key or a wrong T is a programming error (runtime).
  // Enum keys read as std::string.
  template <class T>
  const T& get(const std::string& key) const {
    const T* v = std::get_if<T>(&value(key));
    if (!v)
      DB_THROW(runtime, "option '{}' is of type {}, read with another type", key,
               type_name(spec(key).type));
    return *v;
  }

  // Programmatic override (e.g. a legacy flag); type-checked like get().
  void set_value(const std::string& key, OptionValue v);

  // YAML: nested maps become dotted keys; a section given as a one-element list of a map
  // (TGL's form) is that map. Errors are config errors naming file:line and the key.
  void load_yaml_file(const std::string& path);
  void load_yaml_string(const std::string& text, const std::string& source_name);

  // "key=value", the value parsed by the same rules as YAML scalars; lists as
  // "[10,5]" or "10,5". Errors are config errors that say "--set".
  void apply_set(const std::string& assignment);
  void apply_sets(const std::vector<std::string>& assignments);

  // Canonical nested YAML of every key in declaration order; reloading it reproduces the
  // same values and hash.
  std::string dump_yaml() const;
  uint64_t hash() const;  // 64-bit FNV-1a of dump_yaml()
  // Writes dump_yaml() to path via a temporary file and rename, so readers never see half.
  void write_effective_config(const std::string& path) const;

  // The docs page listing every key (docs/configs.md is this text).
  std::string markdown() const;

 private:
  void set_from_text(const std::string& key, const std::string& text, const std::string& where);
  // Closest declared key or section to `key`, or "" when nothing is close.
  std::string suggest(const std::string& key) const;
  bool is_section(const std::string& prefix) const;
  friend class YamlLoader;

  std::vector<OptionSpec> specs_;
  std::vector<OptionValue> values_;
  std::unordered_map<std::string, size_t> index_;
};

// Text forms shared by the dump, the docs and the parsers.
std::string format_value(const OptionValue& v, OptionType type);
uint64_t fnv1a64(const std::string& text);

// The DepBloom schema (config_schema.cpp): TGL's sections and hyper-parameters as
// defaults, plus data, eval and run.
void declare_depbloom_options(OptionRegistry& registry);
OptionRegistry depbloom_options();

}  // namespace depbloom::cli
