// The numerical guard for refactors: TGN, JODIE, APAN and TGAT (configs/*-wiki.yaml) trained
// in float64 for two epochs on a WIKI prefix must reproduce, within 1e-9 relative, the loss
// of every step and the validation and test AP/AUC recorded in
// tests/fixtures/traces/wiki_f64.json. f64 keeps the comparison independent of the CPU's
// float kernels, so CI can hold a fixture recorded elsewhere. With DEPBLOOM_UPDATE_FIXTURES=1
// the test rewrites the fixture instead (only when a change is meant to move the numbers).
// Also: the fixture's run with its write-back split in two (a filter holding back some nodes'
// writes, applied after the rest) ends in the same node state, step after step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

using nlohmann::json;

constexpr int64_t kPrefixEvents = 6000;
constexpr int kEpochs = 2;
constexpr double kRelTol = 1e-9;

const std::string& fixture_path() {
  static const std::string p =
      std::string(DEPBLOOM_SOURCE_DIR) + "/tests/fixtures/traces/wiki_f64.json";
  return p;
}

json eval_values(const EvalResult& r) {
  if (!r.valid) return nullptr;
  return {r.whole.ap, r.whole.auc, r.batch_mean.ap, r.batch_mean.auc};
}

// One model's trace: every step's loss, then per epoch the validation metrics (all and
// new nodes), then the test metrics.
const dbtest::WikiStream& wiki() {
  static const dbtest::WikiStream w = dbtest::load_wiki(kPrefixEvents);
  return w;
}

TrainerConfig f64_config(const std::string& config) {
  cli::OptionRegistry cfg = cli::depbloom_options();
  cfg.load_yaml_file(std::string(DEPBLOOM_SOURCE_DIR) + "/configs/" + config);
  TrainerConfig tc = cli::trainer_config(cfg.config(), Device::cpu());
  tc.dtype = DType::f64;
  return tc;
}

json trace_of(const std::string& config) {
  Trainer trainer(wiki().stream, wiki().split, f64_config(config));
  json val = json::array();
  for (int epoch = 1; epoch <= kEpochs; ++epoch) {
    const EpochResult r = trainer.run_epoch(epoch);
    val.push_back({eval_values(r.val), eval_values(r.val_new)});
  }
  const auto [test, test_new] = trainer.test();
  return {{"loss", trainer.loss_trace()},
          {"val", val},
          {"test", {eval_values(test), eval_values(test_new)}}};
}

// Every number of `got` within kRelTol of `want`, same structure.
void expect_close(const json& got, const json& want, const std::string& where) {
  ASSERT_EQ(got.type(), want.type()) << where;
  if (got.is_array()) {
    ASSERT_EQ(got.size(), want.size()) << where;
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(got[i], want[i], where + "[" + std::to_string(i) + "]");
  } else if (got.is_object()) {
    for (const auto& [key, value] : want.items()) {
      ASSERT_TRUE(got.contains(key)) << where << "." << key;
      expect_close(got[key], value, where + "." + key);
    }
  } else if (got.is_number()) {
    const double a = got.get<double>(), b = want.get<double>();
    EXPECT_LE(std::abs(a - b), kRelTol * std::max(1e-12, std::abs(b)))
        << where << ": " << a << " against the recorded " << b;
  }
}

json recorded_fixture() {
  std::ifstream in(fixture_path());
  EXPECT_TRUE(in) << "missing " << fixture_path();
  return in ? json::parse(in) : json();
}

TEST(F64Trace, FourModelsMatchTheRecordedFixture) {
  const std::vector<std::string> configs = {"tgn-wiki.yaml", "jodie-wiki.yaml", "apan-wiki.yaml",
                                            "tgat-wiki.yaml"};
  json got;
  for (const auto& c : configs) got[c] = trace_of(c);
  const char* update = std::getenv("DEPBLOOM_UPDATE_FIXTURES");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(fixture_path()) << got.dump(1) << "\n";
    GTEST_SKIP() << "rewrote " << fixture_path();
  }
  const json want = recorded_fixture();
  for (const auto& c : configs) {
    ASSERT_TRUE(want.contains(c)) << c;
    EXPECT_GE(got[c]["loss"].size(), 10u) << c;  // the fixture covers real training
    expect_close(got[c], want[c], c);
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// Epoch 1 of the fixture's run, step by step; after each step its writes go into a shadow
// state in two applies: first the nodes a per-step coin marks 1, then the held-back rest.
// The shadow equals the trainer's state bit for bit after every step, and the trainer's
// losses are the fixture's.
void expect_deferred_write_back_equal(const std::string& config) {
  SCOPED_TRACE(config);
  Trainer trainer(wiki().stream, wiki().split, f64_config(config));
  const model::NodeState& state = trainer.state();
  model::NodeState shadow(state.num_nodes(), state.memory_dim(), state.mail_dim(),
                          state.mail_slots(), state.dtype());
  std::vector<uint8_t> mark(static_cast<size_t>(state.num_nodes()));
  Arena arena;
  const Schedule& steps = trainer.schedule_epoch();
  const json want = recorded_fixture()[config]["loss"];
  ASSERT_GE(want.size(), static_cast<size_t>(steps.size()));
  for (int64_t i = 0; i < steps.size(); ++i) {
    const double loss = trainer.train_step(steps.step(i), 1);
    trainer.flush_writes();  // pipeline.enabled (the CLI's default): the deferred rows land
    const double recorded = want[static_cast<size_t>(i)].get<double>();
    EXPECT_LE(std::abs(loss - recorded), kRelTol * std::abs(recorded)) << "step " << i + 1;
    for (size_t n = 0; n < mark.size(); ++n) mark[n] = ((n * 2654435761u) >> (i % 7)) & 1u;
    model::WriteFilter first{mark.data(), 1}, deferred{mark.data(), 0};
    arena.reset();
    shadow.apply(trainer.last_writes(), first, arena);
    shadow.apply(trainer.last_writes(), deferred, arena);
    ASSERT_TRUE(same_bytes(shadow.memory(), state.memory())) << "step " << i + 1;
    ASSERT_TRUE(same_bytes(shadow.last_update(), state.last_update())) << "step " << i + 1;
    ASSERT_TRUE(same_bytes(shadow.mail(), state.mail())) << "step " << i + 1;
    ASSERT_TRUE(same_bytes(shadow.mail_ts(), state.mail_ts())) << "step " << i + 1;
    ASSERT_EQ(shadow.ring_heads(), state.ring_heads()) << "step " << i + 1;
    ASSERT_EQ(shadow.ring_counts(), state.ring_counts()) << "step " << i + 1;
  }
}

TEST(F64Trace, DeferredWriteBackEndsInTheFixtureRunsState) {
  expect_deferred_write_back_equal("tgn-wiki.yaml");
  expect_deferred_write_back_equal("apan-wiki.yaml");  // mails to neighbours, mailbox 10
}

}  // namespace
}  // namespace depbloom::train
