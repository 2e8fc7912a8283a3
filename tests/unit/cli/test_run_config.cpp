// The typed config: every key round-trips YAML -> RunConfig -> YAML and reaches a field of
// its own, enum values are checked against their name tables, and the model's problems and
// the dtype check come back named by config key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/model/tgnn_config.h"

namespace depbloom::cli {
namespace {

// A text for `s` that differs from its default and that the key accepts; "" when the key
// has a single choice.
std::string other_value(const OptionSpec& s) {
  const OptionValue& d = s.default_value;
  switch (s.type) {
    case OptionType::boolean:
      return std::get<bool>(d) ? "false" : "true";
    case OptionType::int64:
      return std::to_string(std::get<int64_t>(d) + 1);
    case OptionType::float64:
      return fmt::format("{}", std::get<double>(d) + 0.5);
    case OptionType::string:
      if (s.one_char) return std::get<std::string>(d) == ";" ? "#" : ";";
      return "\"some/other value\"";
    case OptionType::enumeration:
      for (const std::string& c : s.choices)
        if (c != std::get<std::string>(d)) return c;
      return "";
    case OptionType::int_list:
      return "[3, 3]";
  }
  return "";
}

// "a.b.c: v" as nested YAML maps.
std::string nested_yaml(const std::string& key, const std::string& value) {
  std::string out, indent;
  size_t begin = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', begin)) {
    out += indent + key.substr(begin, dot - begin) + ":\n";
    indent += "  ";
    begin = dot + 1;
  }
  return out + indent + key.substr(begin) + ": " + value + "\n";
}

std::vector<std::string> dump_lines(const std::string& dump) {
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t nl = dump.find('\n'); nl != std::string::npos; nl = dump.find('\n', begin)) {
    lines.push_back(dump.substr(begin, nl - begin));
    begin = nl + 1;
  }
  return lines;
}

// Each key alone: YAML -> registry -> RunConfig -> a fresh registry -> YAML gives the same
// text, and that text differs from the defaults' in exactly one line (so no two keys share
// a field and every write lands in the struct).
TEST(RunConfig, EveryKeyRoundTripsThroughTheStruct) {
  const OptionRegistry defaults = depbloom_options();
  const std::vector<std::string> default_lines = dump_lines(defaults.dump_yaml());
  int checked = 0;
  for (const OptionSpec& s : defaults.specs()) {
    SCOPED_TRACE(s.key);
    const std::string value = other_value(s);
    if (value.empty()) continue;  // one choice only
    OptionRegistry loaded = depbloom_options();
    loaded.load_yaml_string(nested_yaml(s.key, value), "one-key.yaml");
    OptionRegistry rebuilt = depbloom_options();
    rebuilt.set_config(loaded.config());
    const std::string dump = rebuilt.dump_yaml();
    EXPECT_EQ(dump, loaded.dump_yaml());
    EXPECT_NE(rebuilt.value(s.key), s.default_value);
    const std::vector<std::string> lines = dump_lines(dump);
    ASSERT_EQ(lines.size(), default_lines.size());
    int changed = 0;
    for (size_t i = 0; i < lines.size(); ++i) changed += lines[i] != default_lines[i];
    EXPECT_EQ(changed, 1) << dump;
    ++checked;
  }
  EXPECT_GE(checked, static_cast<int>(defaults.specs().size()) - 2);
}

// All keys at once, through a file's worth of YAML and back.
TEST(RunConfig, AllKeysTogetherRoundTrip) {
  OptionRegistry a = depbloom_options();
  for (const OptionSpec& s : a.specs()) {
    const std::string value = other_value(s);
    if (!value.empty()) a.load_yaml_string(nested_yaml(s.key, value), "all-keys.yaml");
  }
  OptionRegistry b = depbloom_options();
  b.load_yaml_string(a.dump_yaml(), "dump.yaml");
  OptionRegistry c = depbloom_options();
  c.set_config(b.config());
  EXPECT_EQ(c.dump_yaml(), a.dump_yaml());
  for (const OptionSpec& s : a.specs()) {
    if (!other_value(s).empty()) {
      EXPECT_NE(c.value(s.key), s.default_value) << s.key;
    }
  }
}

TEST(RunConfig, DataKeysFillTheLoaderAndSplitSettings) {
  OptionRegistry r = depbloom_options();
  r.load_yaml_string(
      "data:\n  format: csv\n  edge_features: x.npy\n  cache_dir: /tmp/c\n  seed: 9\n"
      "  weight_as_feature: false\n  columns:\n    src: 3\n    dst: 1\n    time: 0\n"
      "    label: 2\n    first_feature: 4\n    header: false\n    delimiter: ' '\n"
      "    comment: '#'\n    bipartite: true\nrun:\n  dtype: f64\n  seed: 5\n",
      "data.yaml");
  const RunConfig& c = r.config();
  EXPECT_EQ(c.load.format, "csv");
  EXPECT_EQ(c.load.edge_features, "x.npy");
  EXPECT_EQ(c.load.cache_dir, "/tmp/c");
  EXPECT_FALSE(c.load.weight_as_feature);
  EXPECT_EQ(c.load.columns.src, 3);
  EXPECT_EQ(c.load.columns.time, 0);
  EXPECT_EQ(c.load.columns.first_feature, 4);
  EXPECT_FALSE(c.load.columns.header);
  EXPECT_EQ(c.load.columns.delimiter, ' ');
  EXPECT_EQ(c.load.columns.comment, '#');
  EXPECT_TRUE(c.load.columns.bipartite);
  EXPECT_EQ(c.split.seed, 9u);    // the new-node draw's seed ...
  EXPECT_EQ(c.trainer.seed, 5u);  // ... apart from the run's
  EXPECT_EQ(c.trainer.dtype, DType::f64);
}

TEST(RunConfig, UnknownEnumValueNamesKeyValueAndChoices) {
  OptionRegistry r = depbloom_options();
  try {
    r.load_yaml_string("memory:\n  memory_update: lstm\n", "bad-enum.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_EQ(e.message(),
              "bad-enum.yaml:2: memory.memory_update: expected one of gru|rnn|transformer, got "
              "'lstm'");
  }
  try {
    r.apply_set("run.dtype=f16");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "--set: run.dtype: expected one of f32|f64, got 'f16'");
  }
  try {
    r.apply_set("data.columns.delimiter=;;");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "--set: data.columns.delimiter: expected one character, got ';;'");
  }
}

TEST(RunConfig, IntegerKeysStayInTheirFieldsRange) {
  OptionRegistry r = depbloom_options();
  try {
    r.apply_set("gnn.att_head=3000000000");  // an int field
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("gnn.att_head: expected an integer >= 1 <= 2147483647"),
              std::string::npos)
        << e.message();
  }
}

std::string trainer_config_error(const std::string& yaml, Device device = Device::cpu()) {
  OptionRegistry r = depbloom_options();
  r.load_yaml_string(yaml, "model.yaml");
  try {
    trainer_config(r.config(), device);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    return e.message();
  }
  return "no error";
}

TEST(RunConfig, ModelProblemsAreNamedByKey) {
  EXPECT_EQ(trainer_config_error("gnn:\n  arch: transformer_attention\n  att_head: 3\n"),
            "gnn.att_head: the attention width 100 is not divisible by 3 heads");
  EXPECT_EQ(trainer_config_error("memory:\n  memory_update: rnn\n  mailbox_size: 2\n"),
            "memory.mailbox_size: 2 mails need the transformer updater; the GRU and RNN "
            "updaters read one mail");
  EXPECT_EQ(trainer_config_error("run:\n  dtype: f64\n", Device::cuda(0)),
            "run.dtype: f64 runs on the CPU only; use run.device: cpu");
  EXPECT_EQ(trainer_config_error("run:\n  dtype: f64\n"), "no error");
}

TEST(RunConfig, TheModelNamesItsOwnFields) {
  model::TgnnConfig m;
  m.layers = 9;
  try {
    model::validate(m);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "TgnnConfig.layers: 9 attention layers; 1 to 4 are supported");
  }
}

}  // namespace
}  // namespace depbloom::cli
