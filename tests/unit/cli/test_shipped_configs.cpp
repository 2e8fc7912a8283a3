// The configs shipped in configs/ and TGL's own config files must load into the schema
// unchanged; this checks loading and the values that tell the models apart, not training.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "depbloom/cli/options.h"

namespace depbloom::cli {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = DEPBLOOM_SOURCE_DIR;

std::vector<fs::path> shipped_configs() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "configs"))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

TEST(ShippedConfigs, EveryFileLoads) {
  const std::vector<fs::path> files = shipped_configs();
  // 5 on WIKI, 3 on CollegeMsg, 3 models x 3 synthetic shapes, 3 models x 4 real datasets
  // that `depbloom-data get` fetches.
  EXPECT_GE(files.size(), 29u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    OptionRegistry r = depbloom_options();
    ASSERT_NO_THROW(r.load_yaml_file(file.string()));
    EXPECT_TRUE(starts_with(first_line(file), "# ")) << "no comment line at the top";
    // TGL's batch, except the config with the TGN authors' own defaults (batch 200) and
    // DepBloom's operating points (P = 8 ranks of k x 600 events, the depbloom strategy).
    const std::string name = file.filename().string();
    const bool authors = name.find("-authors.") != std::string::npos;
    if (starts_with(name, "depbloom-")) {
      EXPECT_EQ(r.get<int64_t>("train.batch_size") % (8 * 600), 0);
      EXPECT_EQ(r.get<std::string>("strategy.name"), "depbloom");
      EXPECT_TRUE(r.get<bool>("pipeline.enabled"));
    } else {
      EXPECT_EQ(r.get<int64_t>("train.batch_size"), authors ? 200 : 600);
    }
    EXPECT_DOUBLE_EQ(r.get<double>("train.lr"), 1e-4);
    const std::string path = r.get<std::string>("data.path");
    ASSERT_FALSE(path.empty());
    if (starts_with(path, "data/synth/")) continue;  // made by depbloom-data synth
    if (text_of(file).find("depbloom-data get ") != std::string::npos) continue;  // fetched
    EXPECT_TRUE(fs::exists(kSourceDir / path)) << path;
  }
}

TEST(ShippedConfigs, ModelsAreWhatTheirNamesSay) {
  for (const fs::path& file : shipped_configs()) {
    SCOPED_TRACE(file.string());
    OptionRegistry r = depbloom_options();
    r.load_yaml_file(file.string());
    std::string name = file.filename().string();
    if (starts_with(name, "depbloom-")) name = name.substr(9);  // an operating point's model
    const auto memory_update = r.get<std::string>("memory.memory_update");
    if (starts_with(name, "tgn-")) {
      EXPECT_EQ(r.get<std::string>("memory.type"), "node");
      EXPECT_EQ(memory_update, "gru");
      // TGL's own TGN (tgn-*-tgl.yaml), else the TGN authors' attention and dropout.
      const bool tgl = name.find("-tgl.") != std::string::npos;
      EXPECT_EQ(r.get<std::string>("gnn.arch"), tgl ? "transformer_attention" : "tgn_attention");
      EXPECT_DOUBLE_EQ(r.get<double>("train.dropout"), tgl ? 0.2 : 0.1);
    } else if (starts_with(name, "jodie-")) {
      EXPECT_EQ(memory_update, "rnn");
      EXPECT_TRUE(r.get<bool>("sampling.no_sample"));
      EXPECT_EQ(r.get<std::string>("gnn.arch"), "identity");
      EXPECT_EQ(r.get<std::string>("gnn.time_transform"), "JODIE");
    } else if (starts_with(name, "apan-")) {
      EXPECT_EQ(memory_update, "transformer");
      EXPECT_EQ(r.get<int64_t>("memory.mailbox_size"), 10);
      EXPECT_EQ(r.get<std::string>("memory.deliver_to"), "neighbors");
      EXPECT_EQ(r.get<std::string>("gnn.arch"), "identity");
    } else if (starts_with(name, "tgat-")) {
      EXPECT_EQ(r.get<std::string>("memory.type"), "none");
      EXPECT_EQ(r.get<int64_t>("sampling.layer"), 2);
      EXPECT_EQ(r.get<std::vector<int64_t>>("sampling.neighbor"), (std::vector<int64_t>{10, 10}));
      EXPECT_EQ(r.get<std::string>("sampling.strategy"), "uniform");
    } else {
      ADD_FAILURE() << "config named after no known model";
    }
  }
}

// TGL's config/*.yml (github.com/amazon-research/tgl), verbatim.
const char* const kTglTgn = R"(sampling:
  - layer: 1
    neighbor: 
      - 10
    strategy: 'recent'
    prop_time: False
    history: 1
    duration: 0
    num_thread: 32
memory: 
  - type: 'node'
    dim_time: 100
    deliver_to: 'self'
    mail_combine: 'last'
    memory_update: 'gru'
    mailbox_size: 1
    combine_node_feature: True
    dim_out: 100
gnn:
  - arch: 'transformer_attention'
    layer: 1
    att_head: 2
    dim_time: 100
    dim_out: 100
train:
  - epoch: 100
    batch_size: 600
    # reorder: 16
    lr: 0.0001
    dropout: 0.2
    att_dropout: 0.2
    all_on_gpu: True
)";

const char* const kTglJodie = R"(sampling:
  - no_sample: True
    history: 1
memory: 
  - type: 'node'
    dim_time: 100
    deliver_to: 'self'
    mail_combine: 'last'
    memory_update: 'rnn'
    mailbox_size: 1
    combine_node_feature: True
    dim_out: 100
gnn:
  - arch: 'identity'
    time_transform: 'JODIE'
train:
  - epoch: 100
    batch_size: 600
    lr: 0.0001
    dropout: 0.1
    all_on_gpu: True
)";

const char* const kTglApan = R"(sampling:
  - layer: 1
    neighbor: 
      - 10
    strategy: 'recent'
    prop_time: False
    history: 1
    duration: 0
    num_thread: 32
    no_neg: True
memory: 
  - type: 'node'
    dim_time: 100
    deliver_to: 'neighbors'
    mail_combine: 'last'
    memory_update: 'transformer'
    attention_head: 2
    mailbox_size: 10
    combine_node_feature: False
    dim_out: 100
gnn:
  - arch: 'identity'
train:
  - epoch: 100
    batch_size: 600
    lr: 0.0001
    dropout: 0.1
    att_dropout: 0.1
    all_on_gpu: True)";

const char* const kTglTgat = R"(sampling:
  - layer: 2
    neighbor: 
      - 10
      - 10
    strategy: 'uniform'
    prop_time: False
    history: 1
    duration: 0
    num_thread: 32
memory: 
  - type: 'none'
    dim_out: 0
gnn:
  - arch: 'transformer_attention'
    layer: 2
    att_head: 2
    dim_time: 100
    dim_out: 100
train:
  - epoch: 100
    batch_size: 600
    # reorder: 16
    lr: 0.0001
    dropout: 0.1
    att_dropout: 0.1
    all_on_gpu: True
)";

// TGL's tutorial spells TGN's gnn section with its two embedding flags.
const char* const kTglTgnGnnFlags = R"(gnn:
  - arch: 'transformer_attention'
    use_src_emb: False
    use_dst_emb: False
    layer: 1
    att_head: 2
    dim_time: 100
    dim_out: 100
)";

TEST(ShippedConfigs, TglFilesLoadUnchanged) {
  OptionRegistry tgn = depbloom_options();
  tgn.load_yaml_string(kTglTgn, "TGN.yml");
  EXPECT_EQ(tgn.get<std::string>("memory.type"), "node");
  EXPECT_EQ(tgn.get<std::string>("memory.memory_update"), "gru");
  EXPECT_EQ(tgn.get<std::string>("memory.mail_combine"), "last");
  EXPECT_TRUE(tgn.get<bool>("memory.combine_node_feature"));
  EXPECT_EQ(tgn.get<int64_t>("sampling.num_thread"), 32);
  EXPECT_TRUE(tgn.get<bool>("train.all_on_gpu"));
  EXPECT_EQ(tgn.get<int64_t>("train.epoch"), 100);
  tgn.load_yaml_string(kTglTgnGnnFlags, "TGN-tutorial.yml");
  EXPECT_FALSE(tgn.get<bool>("gnn.use_src_emb"));

  OptionRegistry jodie = depbloom_options();
  jodie.load_yaml_string(kTglJodie, "JODIE.yml");
  EXPECT_TRUE(jodie.get<bool>("sampling.no_sample"));
  EXPECT_EQ(jodie.get<std::string>("memory.memory_update"), "rnn");
  EXPECT_EQ(jodie.get<std::string>("gnn.arch"), "identity");
  EXPECT_EQ(jodie.get<std::string>("gnn.time_transform"), "JODIE");
  EXPECT_DOUBLE_EQ(jodie.get<double>("train.dropout"), 0.1);

  OptionRegistry apan = depbloom_options();
  apan.load_yaml_string(kTglApan, "APAN.yml");
  EXPECT_TRUE(apan.get<bool>("sampling.no_neg"));
  EXPECT_EQ(apan.get<std::string>("memory.memory_update"), "transformer");
  EXPECT_EQ(apan.get<int64_t>("memory.attention_head"), 2);
  EXPECT_EQ(apan.get<int64_t>("memory.mailbox_size"), 10);
  EXPECT_EQ(apan.get<std::string>("memory.deliver_to"), "neighbors");
  EXPECT_FALSE(apan.get<bool>("memory.combine_node_feature"));

  OptionRegistry tgat = depbloom_options();
  tgat.load_yaml_string(kTglTgat, "TGAT.yml");
  EXPECT_EQ(tgat.get<std::string>("memory.type"), "none");
  EXPECT_EQ(tgat.get<int64_t>("memory.dim_out"), 0);
  EXPECT_EQ(tgat.get<int64_t>("gnn.layer"), 2);
  EXPECT_EQ(tgat.get<std::vector<int64_t>>("sampling.neighbor"), (std::vector<int64_t>{10, 10}));
  EXPECT_EQ(tgat.get<std::string>("sampling.strategy"), "uniform");

  // Every effective config reloads to itself.
  for (const OptionRegistry* r : {&tgn, &jodie, &apan, &tgat}) {
    OptionRegistry back = depbloom_options();
    back.load_yaml_string(r->dump_yaml(), "dump.yaml");
    EXPECT_EQ(back.hash(), r->hash());
  }
}

TEST(ShippedConfigs, UnknownMemoryUpdaterIsRejectedNamingTheKey) {
  OptionRegistry r = depbloom_options();
  try {
    r.load_yaml_string("memory:\n  - type: 'node'\n    memory_update: 'lstm'\n", "LSTM.yml");
    FAIL() << "memory_update: lstm was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config) << e.message();
    EXPECT_NE(e.message().find("LSTM.yml:3"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("memory.memory_update"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'lstm'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace depbloom::cli
