// The numerical guard for refactors: TGN, JODIE, APAN and TGAT (configs/*-wiki.yaml) trained
// in float64 for two epochs on a WIKI prefix must reproduce, within 1e-9 relative, the loss
// of every step and the validation and test AP/AUC recorded in
// tests/fixtures/traces/wiki_f64.json. f64 keeps the comparison independent of the CPU's
// float kernels, so CI can hold a fixture recorded elsewhere. With DEPBLOOM_UPDATE_FIXTURES=1
// the test rewrites the fixture instead (only when a change is meant to move the numbers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
json trace_of(const std::string& config) {
  static const dbtest::WikiStream wiki = dbtest::load_wiki(kPrefixEvents);
  cli::OptionRegistry cfg = cli::depbloom_options();
  cfg.load_yaml_file(std::string(DEPBLOOM_SOURCE_DIR) + "/configs/" + config);
  TrainerConfig tc = cli::trainer_config(cfg.config(), Device::cpu());
  tc.dtype = DType::f64;
  Trainer trainer(wiki.stream, wiki.split, tc);
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
  std::ifstream in(fixture_path());
  ASSERT_TRUE(in) << "missing " << fixture_path();
  const json want = json::parse(in);
  for (const auto& c : configs) {
    ASSERT_TRUE(want.contains(c)) << c;
    EXPECT_GE(got[c]["loss"].size(), 10u) << c;  // the fixture covers real training
    expect_close(got[c], want[c], c);
  }
}

}  // namespace
}  // namespace depbloom::train
