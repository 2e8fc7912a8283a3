// Loading YAML into the OptionRegistry: nested maps become dotted keys, TGL's one-element
// list sections are unwrapped, and every error names the file, the line and the key.
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "depbloom/cli/options.h"

namespace depbloom::cli {

class YamlLoader {
 public:
  YamlLoader(OptionRegistry& reg, const std::string& source) : reg_(reg), source_(source) {}

  void load(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      DB_THROW(config, "{}:{}: malformed YAML: {}", source_, e.mark.line + 1, e.msg);
    }
    if (!root || root.IsNull()) return;  // an empty file keeps every default
    if (!root.IsMap())
      DB_THROW(config, "{}:{}: expected a map of sections at the top level", source_, line(root));
    walk(root, "");
  }

 private:
  int line(const YAML::Node& n) const { return n.Mark().line + 1; }

  void walk(const YAML::Node& map, const std::string& prefix) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      // By value: the iterator hands out a temporary pair.
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) DB_THROW(config, "{}:{}: keys must be plain names", source_, line(k));
      std::string key = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      if (reg_.has(key)) {
        set(key, v, line(k));
      } else if (reg_.is_section(key)) {
        section(key, v, line(k));
      } else {
        std::string near = reg_.suggest(key);
        DB_THROW(config, "{}:{}: unknown key '{}'{}", source_, line(k), key,
                 near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near));
      }
    }
  }

  // TGL writes each section as a list holding one map; more than one would be ambiguous.
  void section(const std::string& key, const YAML::Node& v, int at) {
    if (v.IsNull()) return;
    if (v.IsMap()) return walk(v, key);
    if (v.IsSequence()) {
      if (v.size() == 1 && v[0].IsMap()) return walk(v[0], key);
      DB_THROW(config,
               "{}:{}: section '{}' is a list of {} element(s); expected a map or a "
               "list of exactly one map",
               source_, at, key, v.size());
    }
    DB_THROW(config, "{}:{}: '{}' is a section; expected a map, got '{}'", source_, at, key,
             v.Scalar());
  }

  void set(const std::string& key, const YAML::Node& v, int at) {
    const OptionSpec& s = reg_.spec(key);
    std::string where = fmt::format("{}:{}", source_, at);
    if (v.IsNull())
      DB_THROW(config, "{}: {}: no value (expected {})", where, key, type_name(s.type));
    if (s.type == OptionType::int_list) {
      // A bare integer is accepted as a one-element list.
      if (v.IsScalar()) return reg_.set_from_text(key, v.Scalar(), where);
      if (!v.IsSequence()) DB_THROW(config, "{}: {}: expected a list of integers", where, key);
      std::string joined;
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].IsScalar()) DB_THROW(config, "{}: {}: expected a list of integers", where, key);
        joined += (i ? "," : "") + v[i].Scalar();
      }
      return reg_.set_from_text(key, "[" + joined + "]", where);
    }
    if (!v.IsScalar())
      DB_THROW(config, "{}: {}: expected {}, got a {}", where, key, type_name(s.type),
               v.IsMap() ? "map" : "list");
    // A quoted "600" is a string in YAML, so it is not a number or a bool here.
    bool quoted = v.Tag() == "!";
    if (quoted && s.type != OptionType::string && s.type != OptionType::enumeration)
      DB_THROW(config, "{}: {}: expected {}, got the quoted string '{}'", where, key,
               type_name(s.type), v.Scalar());
    reg_.set_from_text(key, v.Scalar(), where);
  }

  OptionRegistry& reg_;
  std::string source_;
};

void OptionRegistry::load_yaml_string(const std::string& text, const std::string& source_name) {
  YamlLoader(*this, source_name).load(text);
}

void OptionRegistry::load_yaml_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) DB_THROW(config, "cannot read config file {}", path);
  std::stringstream ss;
  ss << f.rdbuf();
  load_yaml_string(ss.str(), path);
}

}  // namespace depbloom::cli
