// OptionRegistry: declaration, typed values, text parsing shared by YAML and --set, the
// canonical YAML dump, its hash and the Markdown docs. YAML walking is in options_yaml.cpp.
#include "depbloom/cli/options.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/ranges.h>

namespace depbloom::cli {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool parse_int(const std::string& text, int64_t* out) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;  // from_chars rejects a leading '+'
  auto r = std::from_chars(first, last, *out);
  return first != last && r.ec == std::errc() && r.ptr == last;
}

bool parse_double(const std::string& text, double* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  // Only finite numbers: nan/inf in a config is always a typo.
  return end == text.c_str() + text.size() && errno == 0 && std::isfinite(*out);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// "[10, 5]", "10,5" or "[]".
bool parse_int_list(const std::string& text, std::vector<int64_t>* out) {
  std::string body = trim(text);
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']')
    body = body.substr(1, body.size() - 2);
  out->clear();
  if (trim(body).empty()) return true;
  for (size_t start = 0;;) {
    size_t comma = body.find(',', start);
    int64_t v = 0;
    if (!parse_int(trim(body.substr(start, comma - start)), &v)) return false;
    out->push_back(v);
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

}  // namespace

const char* type_name(OptionType type) {
  switch (type) {
    case OptionType::boolean:
      return "bool";
    case OptionType::int64:
      return "int";
    case OptionType::float64:
      return "float";
    case OptionType::string:
      return "string";
    case OptionType::enumeration:
      return "enum";
    case OptionType::int_list:
      return "list of int";
  }
  return "?";
}

std::string format_value(const OptionValue& v, OptionType type) {
  switch (type) {
    case OptionType::boolean:
      return std::get<bool>(v) ? "true" : "false";
    case OptionType::int64:
      return fmt::format("{}", std::get<int64_t>(v));
    case OptionType::float64:
      return fmt::format("{}", std::get<double>(v));  // shortest exact
    case OptionType::string:
      return quote(std::get<std::string>(v));
    case OptionType::enumeration:
      return std::get<std::string>(v);
    case OptionType::int_list:
      return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(v), ", "));
  }
  return "";
}

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Both sides of a dotted name must stay unambiguous: a key is never also a section.
void OptionRegistry::declare(OptionSpec spec) {
  DB_ASSERT(!spec.key.empty() && spec.key.front() != '.' && spec.key.back() != '.',
            "bad option key '{}'", spec.key);
  DB_ASSERT(!has(spec.key), "option '{}' declared twice", spec.key);
  DB_ASSERT(!is_section(spec.key), "option '{}' is also a section", spec.key);
  for (size_t dot = spec.key.find('.'); dot != std::string::npos; dot = spec.key.find('.', dot + 1))
    DB_ASSERT(!has(spec.key.substr(0, dot)), "option '{}' is inside key '{}'", spec.key,
              spec.key.substr(0, dot));
  spec.default_value = spec.read(RunConfig());
  const std::string why = misfit(spec, spec.default_value);
  DB_ASSERT(why.empty(), "option '{}': its default is not {}", spec.key, why);
  index_[spec.key] = specs_.size();
  specs_.push_back(std::move(spec));
}

const OptionSpec& OptionRegistry::spec(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) DB_THROW(runtime, "option '{}' is not declared", key);
  return specs_[it->second];
}

OptionValue OptionRegistry::value(const std::string& key) const {
  return spec(key).read(config_);
}

std::string OptionRegistry::misfit(const OptionSpec& s, const OptionValue& v) {
  const bool list = s.type == OptionType::int_list;
  auto in_range = [&](int64_t x) { return x >= s.min && x <= s.max; };
  std::string range = list ? "a list of integers" : "an integer";
  if (s.min != kNoMin) range += fmt::format(" >= {}", s.min);
  if (s.max != std::numeric_limits<int64_t>::max()) range += fmt::format(" <= {}", s.max);
  switch (s.type) {
    case OptionType::int64:
      return in_range(std::get<int64_t>(v)) ? "" : range;
    case OptionType::int_list: {
      const auto& xs = std::get<std::vector<int64_t>>(v);
      return std::all_of(xs.begin(), xs.end(), in_range) ? "" : range;
    }
    case OptionType::enumeration: {
      const auto& text = std::get<std::string>(v);
      if (std::find(s.choices.begin(), s.choices.end(), text) != s.choices.end()) return "";
      return fmt::format("one of {}", fmt::join(s.choices, "|"));
    }
    case OptionType::string:
      return s.one_char && std::get<std::string>(v).size() > 1 ? "one character" : "";
    case OptionType::boolean:
    case OptionType::float64:
      return "";
  }
  return "";
}

void OptionRegistry::set_value(const std::string& key, OptionValue v) {
  const OptionSpec& s = spec(key);
  if (v.index() != s.default_value.index())
    DB_THROW(runtime, "option '{}' is of type {}, set with another type", key, type_name(s.type));
  const std::string why = misfit(s, v);
  if (!why.empty()) DB_THROW(config, "{}: expected {}, got {}", key, why, format_value(v, s.type));
  s.write(config_, v);
}

bool OptionRegistry::is_section(const std::string& prefix) const {
  std::string p = prefix + ".";
  return std::any_of(specs_.begin(), specs_.end(),
                     [&](const OptionSpec& s) { return s.key.compare(0, p.size(), p) == 0; });
}

std::string OptionRegistry::suggest(const std::string& key) const {
  std::string best;
  size_t best_d = std::string::npos;
  auto consider = [&](const std::string& cand) {
    size_t d = edit_distance(key, cand);
    if (d < best_d) best_d = d, best = cand;
  };
  for (const auto& s : specs_) {
    consider(s.key);
    for (size_t dot = s.key.find('.'); dot != std::string::npos; dot = s.key.find('.', dot + 1))
      consider(s.key.substr(0, dot));
  }
  // Close means a typo or two, not a different word.
  return best_d <= std::max<size_t>(2, key.size() / 4) ? best : std::string();
}

// `where` is "file:line" or "--set"; every message names it, the key, what was expected and
// the text.
void OptionRegistry::set_from_text(const std::string& key, const std::string& text,
                                   const std::string& where) {
  const OptionSpec& s = spec(key);
  auto bad = [&](const std::string& expected) {
    DB_THROW(config, "{}: {}: expected {}, got '{}'", where, key, expected, text);
  };
  OptionValue v;
  switch (s.type) {
    case OptionType::boolean:
      // YAML 1.2's core booleans (TGL writes True/False); YAML 1.1's "yes", "on" and "1"
      // are too easy to misread and are rejected.
      if (text == "true" || text == "True" || text == "TRUE")
        v = true;
      else if (text == "false" || text == "False" || text == "FALSE")
        v = false;
      else
        bad("a bool (true or false)");
      break;
    case OptionType::int64: {
      int64_t x = 0;
      if (!parse_int(text, &x)) bad("an integer");
      v = x;
      break;
    }
    case OptionType::float64: {
      double x = 0;
      if (!parse_double(text, &x)) bad("a number");
      v = x;
      break;
    }
    case OptionType::string:
    case OptionType::enumeration:
      v = text;
      break;
    case OptionType::int_list: {
      std::vector<int64_t> xs;
      if (!parse_int_list(text, &xs)) bad("a list of integers");
      v = std::move(xs);
      break;
    }
  }
  const std::string why = misfit(s, v);
  if (!why.empty()) bad(why);
  s.write(config_, v);
}

void OptionRegistry::apply_set(const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos) DB_THROW(config, "--set {}: expected key=value", assignment);
  std::string key = trim(assignment.substr(0, eq));
  if (is_section(key))
    DB_THROW(config, "--set {}: '{}' is a section; set one of its keys ({}.<name>)", assignment,
             key, key);
  if (!has(key)) {
    std::string near = suggest(key);
    DB_THROW(config, "--set {}: unknown key '{}'{}", assignment, key,
             near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near));
  }
  set_from_text(key, trim(assignment.substr(eq + 1)), "--set");
}

void OptionRegistry::apply_sets(const std::vector<std::string>& assignments) {
  for (const auto& a : assignments) apply_set(a);
}

// Sections open when the dotted prefix changes; declaration order keeps it stable.
std::string OptionRegistry::dump_yaml() const {
  std::string out;
  std::vector<std::string> open;
  for (size_t i = 0; i < specs_.size(); ++i) {
    std::vector<std::string> parts;
    for (size_t b = 0;;) {
      size_t dot = specs_[i].key.find('.', b);
      parts.push_back(specs_[i].key.substr(b, dot - b));
      if (dot == std::string::npos) break;
      b = dot + 1;
    }
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common])
      ++common;
    open.resize(common);
    for (size_t d = common; d + 1 < parts.size(); ++d) {
      out += std::string(2 * d, ' ') + parts[d] + ":\n";
      open.push_back(parts[d]);
    }
    out += std::string(2 * open.size(), ' ') + parts.back() + ": " +
           format_value(specs_[i].read(config_), specs_[i].type) + "\n";
  }
  return out;
}

uint64_t OptionRegistry::hash() const {
  return fnv1a64(dump_yaml());
}

void OptionRegistry::write_effective_config(const std::string& path) const {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) DB_THROW(runtime, "cannot write {}", tmp);
    f << dump_yaml();
    f.flush();
    if (!f) DB_THROW(runtime, "cannot write {}", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    DB_THROW(runtime, "cannot rename {} to {}", tmp, path);
  }
}

std::string OptionRegistry::markdown() const {
  std::string out =
      "# Config keys\n\n"
      "Every key `depbloom-train` reads, with its type, default and meaning. Set them in a\n"
      "YAML file (`--config FILE`, sections as nested maps; TGL's one-element-list form is\n"
      "accepted) or on the command line (`--set key=value`, repeatable, applied last).\n"
      "Unknown keys and wrong types are errors. The effective config is printed and saved\n"
      "in the run folder.\n\n"
      "Generated from `src/cli/config_schema.cpp`; regenerate with\n"
      "`DEPBLOOM_UPDATE_DOCS=1 ./test_cli --gtest_filter='*Docs*'`.\n\n"
      "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (size_t i = 0; i < specs_.size(); ++i) {
    const OptionSpec& s = specs_[i];
    std::string type = s.type == OptionType::enumeration
                           ? fmt::format("{}", fmt::join(s.choices, " \\| "))
                           : type_name(s.type);
    if (s.min != kNoMin) type += fmt::format(" >= {}", s.min);
    std::string help = s.help;
    for (size_t p = help.find('|'); p != std::string::npos; p = help.find('|', p + 2))
      help.replace(p, 1, "\\|");
    out += fmt::format("| `{}` | {} | `{}` | {} |\n", s.key, type,
                       format_value(s.default_value, s.type), help);
  }
  return out;
}

}  // namespace depbloom::cli
