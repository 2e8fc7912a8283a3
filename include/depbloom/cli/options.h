// The option registry: every config key declared once, bound to its RunConfig field
// (run_config.h) with its type, one-line meaning and, from the field's initialiser, its
// default; YAML files fill it, `--set key=value` overrides it, and the effective config is
// dumped as canonical YAML (with a stable hash) and rendered as the docs table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "depbloom/cli/run_config.h"
#include "depbloom/core/error.h"
#include "depbloom/core/name_table.h"

namespace depbloom::cli {

enum class OptionType { boolean, int64, float64, string, enumeration, int_list };

// Enum values are held as their name; int lists hold per-layer / per-hop values.
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();

struct OptionSpec {
  std::string key;  // dotted: "train.batch_size"
  OptionType type = OptionType::string;
  OptionValue default_value;         // the field's value in a default RunConfig
  std::vector<std::string> choices;  // enumeration only
  std::string help;                  // one line
  // Accepted range of an int or of each element of an int list (the field's type sets max).
  int64_t min = kNoMin;
  int64_t max = std::numeric_limits<int64_t>::max();
  bool one_char = false;  // a string held in a char: one character, or none
  // The bound field: read as an OptionValue, and written from one already checked
  // against the type, range and choices above.
  std::function<OptionValue(const RunConfig&)> read;
  std::function<void(RunConfig&, const OptionValue&)> write;
};

const char* type_name(OptionType type);

class OptionRegistry {
 public:
  // Binds `key` to the field `field(config)` returns (a lambda RunConfig& -> T&). T is
  // bool, an integer, double, std::string, char (a one-character string) or
  // std::vector<int64_t>; `min` bounds integers and list elements. Declaring a key twice
  // or a key that is also a section is a programming error (runtime).
  template <class Field>
  void bind(const std::string& key, Field field, const std::string& help, int64_t min = kNoMin);
  // An enum (or any value type) named by `names`.
  template <class Field, class T>
  void bind(const std::string& key, Field field, const NameTable<T>& names,
            const std::string& help);
  // A string field that holds one of `choices`.
  template <class Field>
  void bind_choice(const std::string& key, Field field, std::vector<std::string> choices,
                   const std::string& help);

  bool has(const std::string& key) const { return index_.count(key) != 0; }
  const OptionSpec& spec(const std::string& key) const;
  const std::vector<OptionSpec>& specs() const { return specs_; }  // declaration order
  OptionValue value(const std::string& key) const;

  // Typed read of one key; an unknown key or a wrong T is a programming error (runtime).
  // Enum keys read as std::string.
  template <class T>
  T get(const std::string& key) const {
    OptionValue v = value(key);
    T* typed = std::get_if<T>(&v);
    if (!typed)
      DB_THROW(runtime, "option '{}' is of type {}, read with another type", key,
               type_name(spec(key).type));
    return std::move(*typed);
  }

  // Programmatic override (e.g. a legacy flag); checked like text.
  void set_value(const std::string& key, OptionValue v);

  // The typed config every key writes into; set_config replaces it whole.
  const RunConfig& config() const { return config_; }
  void set_config(const RunConfig& config) { config_ = config; }

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
  void declare(OptionSpec spec);
  void set_from_text(const std::string& key, const std::string& text, const std::string& where);
  // The reason `v` does not fit `s` ("an integer >= 1"), or "" when it fits.
  static std::string misfit(const OptionSpec& s, const OptionValue& v);
  // Closest declared key or section to `key`, or "" when nothing is close.
  std::string suggest(const std::string& key) const;
  bool is_section(const std::string& prefix) const;
  friend class YamlLoader;

  std::vector<OptionSpec> specs_;
  std::unordered_map<std::string, size_t> index_;
  RunConfig config_;
};

// Text forms shared by the dump, the docs and the parsers.
std::string format_value(const OptionValue& v, OptionType type);
uint64_t fnv1a64(const std::string& text);

// The DepBloom schema (config_schema.cpp): TGL's sections and hyper-parameters as
// defaults, plus data, eval and run.
void declare_depbloom_options(OptionRegistry& registry);
OptionRegistry depbloom_options();

// ---- the binding templates ----

template <class Field>
void OptionRegistry::bind(const std::string& key, Field field, const std::string& help,
                          int64_t min) {
  using T = std::remove_reference_t<decltype(field(std::declval<RunConfig&>()))>;
  OptionSpec s;
  s.key = key;
  s.help = help;
  s.min = min;
  // Reads go through the same accessor; it returns a reference into what it is given.
  auto at = [field](const RunConfig& c) -> const T& { return field(const_cast<RunConfig&>(c)); };
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                std::is_same_v<T, std::string> || std::is_same_v<T, std::vector<int64_t>>) {
    s.type = std::is_same_v<T, bool>          ? OptionType::boolean
             : std::is_same_v<T, double>      ? OptionType::float64
             : std::is_same_v<T, std::string> ? OptionType::string
                                              : OptionType::int_list;
    s.read = [at](const RunConfig& c) { return OptionValue(at(c)); };
    s.write = [field](RunConfig& c, const OptionValue& v) { field(c) = std::get<T>(v); };
  } else if constexpr (std::is_same_v<T, char>) {
    s.type = OptionType::string;
    s.one_char = true;
    s.read = [at](const RunConfig& c) {
      return OptionValue(at(c) == 0 ? std::string() : std::string(1, at(c)));
    };
    s.write = [field](RunConfig& c, const OptionValue& v) {
      const auto& text = std::get<std::string>(v);
      field(c) = text.empty() ? '\0' : text[0];
    };
  } else {
    static_assert(std::is_integral_v<T>, "bind: unsupported field type");
    s.type = OptionType::int64;
    s.min = std::max<int64_t>(min, std::numeric_limits<T>::min());
    s.max = static_cast<int64_t>(
        std::min<uint64_t>(std::numeric_limits<T>::max(), std::numeric_limits<int64_t>::max()));
    s.read = [at](const RunConfig& c) { return OptionValue(static_cast<int64_t>(at(c))); };
    s.write = [field](RunConfig& c, const OptionValue& v) {
      field(c) = static_cast<T>(std::get<int64_t>(v));
    };
  }
  declare(std::move(s));
}

template <class Field, class T>
void OptionRegistry::bind(const std::string& key, Field field, const NameTable<T>& names,
                          const std::string& help) {
  OptionSpec s;
  s.key = key;
  s.type = OptionType::enumeration;
  s.choices = names.names();
  s.help = help;
  s.read = [key, field, names](const RunConfig& c) {
    const char* name = names.name(field(const_cast<RunConfig&>(c)));
    DB_ASSERT(name != nullptr, "option '{}' holds a value its name table lacks", key);
    return OptionValue(std::string(name));
  };
  s.write = [field, names](RunConfig& c, const OptionValue& v) {
    field(c) = *names.parse(std::get<std::string>(v));
  };
  declare(std::move(s));
}

template <class Field>
void OptionRegistry::bind_choice(const std::string& key, Field field,
                                 std::vector<std::string> choices, const std::string& help) {
  OptionSpec s;
  s.key = key;
  s.type = OptionType::enumeration;
  s.choices = std::move(choices);
  s.help = help;
  s.read = [field](const RunConfig& c) { return OptionValue(field(const_cast<RunConfig&>(c))); };
  s.write = [field](RunConfig& c, const OptionValue& v) { field(c) = std::get<std::string>(v); };
  declare(std::move(s));
}

}  // namespace depbloom::cli
