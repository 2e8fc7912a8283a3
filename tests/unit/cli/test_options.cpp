// Tests of the option registry: defaults, YAML loading (incl. TGL's list form), --set,
// the error messages for unknown keys, wrong types, malformed YAML and missing files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "depbloom/cli/options.h"

namespace depbloom::cli {
namespace {

// Runs f, expects a config error, returns its message.
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(Options, DefaultsMatchTgl) {
  OptionRegistry r = depbloom_options();
  EXPECT_EQ(r.get<int64_t>("train.batch_size"), 600);
  EXPECT_EQ(r.get<int64_t>("sampling.layer"), 1);
  EXPECT_EQ(r.get<std::vector<int64_t>>("sampling.neighbor"), std::vector<int64_t>{10});
  EXPECT_EQ(r.get<std::string>("memory.type"), "node");
  EXPECT_EQ(r.get<std::string>("memory.memory_update"), "gru");
  EXPECT_DOUBLE_EQ(r.get<double>("train.lr"), 1e-4);
  EXPECT_FALSE(r.get<bool>("data.drop_self_loops"));
  EXPECT_EQ(r.get<std::string>("data.path"), "");
  for (const auto& s : r.specs()) EXPECT_FALSE(s.help.empty()) << s.key;
}

TEST(Options, WrongGetterIsRuntimeError) {
  OptionRegistry r = depbloom_options();
  try {
    r.get<double>("train.batch_size");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
  }
  EXPECT_THROW(r.get<int64_t>("train.nope"), Error);
  EXPECT_THROW(r.set_value("train.batch_size", 1.0), Error);
  EXPECT_THROW(r.set_value("train.batch_size", int64_t{0}), Error);
  EXPECT_THROW(r.set_value("memory.memory_update", std::string("lstm")), Error);
  r.set_value("train.batch_size", int64_t{64});
  EXPECT_EQ(r.get<int64_t>("train.batch_size"), 64);
}

TEST(Options, DeclaringTwiceOrKeyAsSectionFails) {
  OptionRegistry r;
  auto batch = [](RunConfig & c) -> auto& {
    return c.trainer.batch_size;
  };
  r.bind("a.b", batch, "x", 1);
  EXPECT_THROW(r.bind("a.b", batch, "x", 1), Error);
  EXPECT_THROW(r.bind("a", batch, "x", 1), Error);
  EXPECT_THROW(r.bind("a.b.c", batch, "x", 1), Error);
  // The field's default (600) must lie in the declared range.
  EXPECT_THROW(r.bind("a.min", batch, "x", 1000), Error);
  // A name table without the field's default value.
  const NameTable<bool> only_true{{true, "on"}};
  EXPECT_THROW(
      r.bind(
          "a.flag", [](RunConfig & c) -> auto& { return c.trainer.prop_time; }, only_true, "x"),
      Error);
}

TEST(Options, YamlOverrides) {
  OptionRegistry r = depbloom_options();
  r.load_yaml_string(
      "train:\n  batch_size: 200\n  lr: 0.001\n  epoch: 10\n"
      "sampling:\n  neighbor: [20, 10]\n  layer: 2\n"
      "memory:\n  type: none\n"
      "data:\n  drop_self_loops: true\n  path: /tmp/x.csv\n",
      "cfg.yaml");
  EXPECT_EQ(r.get<int64_t>("train.batch_size"), 200);
  EXPECT_DOUBLE_EQ(r.get<double>("train.lr"), 0.001);
  EXPECT_EQ(r.get<std::vector<int64_t>>("sampling.neighbor"), (std::vector<int64_t>{20, 10}));
  EXPECT_EQ(r.get<std::string>("memory.type"), "none");
  EXPECT_TRUE(r.get<bool>("data.drop_self_loops"));
  EXPECT_EQ(r.get<std::string>("data.path"), "/tmp/x.csv");
  EXPECT_EQ(r.get<int64_t>("gnn.layer"), 1);  // untouched keys keep defaults
}

TEST(Options, EmptyYamlKeepsDefaults) {
  OptionRegistry r = depbloom_options();
  uint64_t h = r.hash();
  r.load_yaml_string("", "empty.yaml");
  r.load_yaml_string("# only a comment\n", "empty.yaml");
  EXPECT_EQ(r.hash(), h);
}

TEST(Options, TglOneElementListForm) {
  OptionRegistry r = depbloom_options();
  r.load_yaml_string(
      "sampling:\n  - layer: 1\n    neighbor:\n      - 10\n    strategy: 'uniform'\n"
      "data:\n  - drop_self_loops: True\n"
      "gnn:\n  - arch: identity\n",
      "tgn.yml");
  EXPECT_EQ(r.get<std::string>("sampling.strategy"), "uniform");
  EXPECT_EQ(r.get<std::string>("gnn.arch"), "identity");
  EXPECT_TRUE(r.get<bool>("data.drop_self_loops"));  // TGL's capitalised booleans
  std::string msg = config_error(
      [&] { r.load_yaml_string("sampling:\n  - layer: 1\n  - layer: 2\n", "two.yml"); });
  EXPECT_NE(msg.find("two.yml:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'sampling'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 element"), std::string::npos) << msg;
}

TEST(Options, UnknownKeyNamesFileLineAndSuggests) {
  OptionRegistry r = depbloom_options();
  std::string msg = config_error(
      [&] { r.load_yaml_string("train:\n  epoch: 2\n  batchsize: 100\n", "cfg.yaml"); });
  EXPECT_NE(msg.find("cfg.yaml:3: unknown key 'train.batchsize'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'train.batch_size'"), std::string::npos) << msg;
  msg = config_error([&] { r.load_yaml_string("trian:\n  epoch: 2\n", "cfg.yaml"); });
  EXPECT_NE(msg.find("cfg.yaml:1: unknown key 'trian'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'train'"), std::string::npos) << msg;
  msg = config_error([&] { r.load_yaml_string("train:\n  completely_else: 1\n", "c.yaml"); });
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

TEST(Options, WrongTypesNameKeyLineTypeAndText) {
  struct Case {
    const char* yaml;
    const char* expect;
  };
  const Case cases[] = {
      {"train:\n  batch_size: abc\n", "c.yaml:2: train.batch_size: expected an integer, got 'abc'"},
      {"train:\n  batch_size: 1.5\n", "expected an integer, got '1.5'"},
      {"train:\n  batch_size: '600'\n", "quoted string '600'"},
      {"train:\n  batch_size: 0\n", "train.batch_size: expected an integer >= 1, got '0'"},
      {"sampling:\n  neighbor: [10, 0]\n", "expected a list of integers >= 1"},
      {"train:\n  lr: fast\n", "train.lr: expected a number, got 'fast'"},
      {"data:\n  cache: yes\n", "data.cache: expected a bool (true or false), got 'yes'"},
      {"memory:\n  memory_update: lstm\n",
       "memory.memory_update: expected one of gru|rnn|transformer, got 'lstm'"},
      {"memory:\n  type: gru\n", "memory.type: expected one of node|none, got 'gru'"},
      {"sampling:\n  neighbor: [10, x]\n", "sampling.neighbor: expected a list of integers"},
      {"train:\n  epoch:\n", "train.epoch: no value"},
      {"train:\n  epoch: [1, 2]\n", "train.epoch: expected int, got a list"},
      {"train: 5\n", "'train' is a section"},
      {"- 1\n- 2\n", "expected a map of sections"},
  };
  for (const auto& c : cases) {
    OptionRegistry r = depbloom_options();
    std::string msg = config_error([&] { r.load_yaml_string(c.yaml, "c.yaml"); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.yaml << " -> " << msg;
  }
}

TEST(Options, MalformedYamlNamesFileAndLine) {
  OptionRegistry r = depbloom_options();
  std::string msg =
      config_error([&] { r.load_yaml_string("train:\n  epoch: 2\n  lr: [1, 2\n", "bad.yaml"); });
  EXPECT_NE(msg.find("bad.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed YAML"), std::string::npos) << msg;
}

TEST(Options, MissingFileIsConfigError) {
  OptionRegistry r = depbloom_options();
  std::string msg = config_error([&] { r.load_yaml_file("/nonexistent/depbloom.yaml"); });
  EXPECT_NE(msg.find("/nonexistent/depbloom.yaml"), std::string::npos) << msg;
}

TEST(Options, SetOverrides) {
  OptionRegistry r = depbloom_options();
  r.load_yaml_string("train:\n  batch_size: 200\n", "c.yaml");
  r.apply_sets({"train.batch_size=50", "sampling.neighbor=[5, 3]", "train.lr=2e-3",
                "memory.memory_update=rnn", "data.cache=false", "run.out=runs/a=b",
                "gnn.layer = 2"});
  EXPECT_EQ(r.get<int64_t>("train.batch_size"), 50);
  EXPECT_EQ(r.get<std::vector<int64_t>>("sampling.neighbor"), (std::vector<int64_t>{5, 3}));
  EXPECT_DOUBLE_EQ(r.get<double>("train.lr"), 2e-3);
  EXPECT_EQ(r.get<std::string>("memory.memory_update"), "rnn");
  EXPECT_FALSE(r.get<bool>("data.cache"));
  EXPECT_EQ(r.get<std::string>("run.out"), "runs/a=b");
  EXPECT_EQ(r.get<int64_t>("gnn.layer"), 2);
  r.apply_set("sampling.neighbor=7,6");
  EXPECT_EQ(r.get<std::vector<int64_t>>("sampling.neighbor"), (std::vector<int64_t>{7, 6}));
}

TEST(Options, SetErrorsSaySet) {
  OptionRegistry r = depbloom_options();
  std::string msg = config_error([&] { r.apply_set("train.batch_size"); });
  EXPECT_NE(msg.find("--set train.batch_size: expected key=value"), std::string::npos) << msg;
  msg = config_error([&] { r.apply_set("train.bach_size=5"); });
  EXPECT_NE(msg.find("--set"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'train.bach_size'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'train.batch_size'"), std::string::npos) << msg;
  msg = config_error([&] { r.apply_set("train=5"); });
  EXPECT_NE(msg.find("'train' is a section"), std::string::npos) << msg;
  msg = config_error([&] { r.apply_set("train.epoch=three"); });
  EXPECT_NE(msg.find("--set: train.epoch: expected an integer, got 'three'"), std::string::npos)
      << msg;
}

TEST(Options, DumpReloadRoundTrip) {
  OptionRegistry a = depbloom_options();
  a.apply_sets({"train.lr=0.000123", "data.path=/data/with \"quotes\" and \\ slash",
                "sampling.neighbor=[]", "train.dropout=0.1", "run.seed=7"});
  OptionRegistry b = depbloom_options();
  b.load_yaml_string(a.dump_yaml(), "dump.yaml");
  EXPECT_EQ(a.dump_yaml(), b.dump_yaml());
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(b.get<std::string>("data.path"), "/data/with \"quotes\" and \\ slash");
  EXPECT_TRUE(b.get<std::vector<int64_t>>("sampling.neighbor").empty());
  EXPECT_NE(a.hash(), depbloom_options().hash());
  // Sections appear once each, in declaration order.
  std::string d = depbloom_options().dump_yaml();
  EXPECT_EQ(d.rfind("train:\n"), d.find("train:\n"));
  EXPECT_LT(d.find("sampling:\n"), d.find("memory:\n"));
}

TEST(Options, WriteEffectiveConfigIsReloadable) {
  OptionRegistry a = depbloom_options();
  a.apply_set("train.epoch=9");
  std::string path =
      (std::filesystem::temp_directory_path() / "depbloom_test_config.yaml").string();
  a.write_effective_config(path);
  OptionRegistry b = depbloom_options();
  b.load_yaml_file(path);
  EXPECT_EQ(b.hash(), a.hash());
  EXPECT_EQ(b.get<int64_t>("train.epoch"), 9);
  std::remove(path.c_str());
}

TEST(Options, Fnv1aKnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace depbloom::cli
