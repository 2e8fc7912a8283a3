// What a training step costs in calls (EpochCalls, backend/op_counts.h): the same in two runs
// of one config, the same for the serial and the pipelined step (but for the winners'
// gathers of the pipelined step's filtered apply, whose rest runs in the side lane), and
// --plan's dry run (OpCountOnly) counts exactly what the real epoch does. TGN, APAN, JODIE.
#include <gtest/gtest.h>

#include <string>

#include "depbloom/backend/op_counts.h"
#include "depbloom/train/run_log.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace dbtraintest {
namespace {

using depbloom::backend::OpCounts;
using depbloom::backend::OpKind;
using depbloom::data::ChronoSplit;
using depbloom::data::EventStream;
using depbloom::model::EmbeddingKind;
using depbloom::model::MemoryKind;
using depbloom::train::EpochCalls;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

enum class Model { tgn, apan, jodie };

TrainerConfig config(Model m, bool pipeline) {
  TrainerConfig c;
  c.model.d_mem = 8;
  c.model.d_mem_time = 4;
  c.model.d_emb = 8;
  c.model.d_gnn_time = 4;
  c.model.heads = 2;
  c.model.memory_heads = 2;
  c.model.neighbours = 4;
  c.model.dropout = 0.1;
  if (m == Model::apan) {
    c.model.memory = MemoryKind::transformer;
    c.model.embedding = EmbeddingKind::identity;
    c.model.mailbox = 3;
    c.deliver_to_neighbours = true;
  } else if (m == Model::jodie) {
    c.model.memory = MemoryKind::rnn;
    c.model.embedding = EmbeddingKind::jodie;
  }
  c.batch_size = 16;
  c.eval_batch_size = 16;
  c.seed = 3;
  c.pipeline.enabled = pipeline;
  c.pipeline.horizon = 1;
  return c;
}

// Two epochs' calls (the second starts from trained parameters and a reset node state).
std::vector<EpochCalls> run_calls(const EventStream& s, const ChronoSplit& split,
                                  const TrainerConfig& cfg) {
  Trainer t(s, split, cfg);
  return {t.run_epoch(1).calls, t.run_epoch(2).calls};
}

void expect_same(const OpCounts& a, const OpCounts& b, const std::string& what) {
  for (size_t k = 0; k < depbloom::backend::kOpKinds; ++k) {
    const auto kind = static_cast<OpKind>(k);
    EXPECT_EQ(a[kind], b[kind]) << what << ": " << depbloom::backend::op_kind_name(kind);
  }
  EXPECT_EQ(a.uploads, b.uploads) << what;
}

class StepCalls : public ::testing::TestWithParam<Model> {
 protected:
  EventStream s = tiny_stream(23, 240, 120, 3);
  ChronoSplit split = tiny_split(s, 160, 200);
};

TEST_P(StepCalls, SameInTwoRuns) {
  const std::vector<EpochCalls> a = run_calls(s, split, config(GetParam(), true));
  const std::vector<EpochCalls> b = run_calls(s, split, config(GetParam(), true));
  for (size_t e = 0; e < a.size(); ++e) {
    EXPECT_GT(a[e].train.total_calls(), 0);
    EXPECT_GT(a[e].eval_batches, 0);
    expect_same(a[e].train, b[e].train, "training");
    expect_same(a[e].side, b[e].side, "side lane");
    expect_same(a[e].eval, b[e].eval, "evaluation");
  }
}

// Pipelined, the urgent apply takes a subset of the step's writes and gathers its winners
// first (a serial apply takes them all, in order); the deferred rest is side work.
TEST_P(StepCalls, PipelinedStepEqualsTheSerialOneButForTheFilteredApply) {
  const std::vector<EpochCalls> serial = run_calls(s, split, config(GetParam(), false));
  const std::vector<EpochCalls> piped = run_calls(s, split, config(GetParam(), true));
  for (size_t e = 0; e < serial.size(); ++e) {
    for (size_t k = 0; k < depbloom::backend::kOpKinds; ++k) {
      const auto kind = static_cast<OpKind>(k);
      if (kind == OpKind::gather_rows) continue;
      EXPECT_EQ(serial[e].train[kind], piped[e].train[kind])
          << depbloom::backend::op_kind_name(kind);
    }
    EXPECT_GE(piped[e].train[OpKind::gather_rows], serial[e].train[OpKind::gather_rows]);
    EXPECT_GE(piped[e].train.uploads, serial[e].train.uploads);
    EXPECT_EQ(serial[e].side.total_calls(), 0);
    EXPECT_GT(piped[e].side.total_calls(), 0);
    expect_same(serial[e].eval, piped[e].eval, "evaluation");
  }
}

TEST_P(StepCalls, ADryRunCountsWhatTheRunDoes) {
  const TrainerConfig cfg = config(GetParam(), true);
  Trainer real(s, split, cfg);
  const EpochCalls ran = real.run_epoch(1).calls;
  Trainer dry(s, split, cfg);
  EpochCalls counted;
  {
    depbloom::backend::OpCountOnly count_only;
    counted = dry.train_epoch(1).calls;
  }
  expect_same(ran.train, counted.train, "training");
  expect_same(ran.side, counted.side, "side lane");
}

TEST_P(StepCalls, ReportedPerStepWithKindsOnRequest) {
  TrainerConfig cfg = config(GetParam(), false);
  cfg.profile_ops = true;
  Trainer t(s, split, cfg);
  const depbloom::train::EpochResult r = t.run_epoch(1);
  const nlohmann::json j = depbloom::train::epoch_json(r)["calls"];
  const double steps = static_cast<double>(r.batches);
  EXPECT_DOUBLE_EQ(j["op_calls_per_step"].get<double>(),
                   static_cast<double>(r.calls.train.total_calls()) / steps);
  EXPECT_DOUBLE_EQ(j["uploads_per_step"].get<double>(),
                   static_cast<double>(r.calls.train.uploads) / steps);
  EXPECT_DOUBLE_EQ(j["side_op_calls_per_step"].get<double>(), 0.0);
  EXPECT_TRUE(j.contains("eval_op_calls_per_batch"));
  double by_kind = 0;
  for (const auto& [kind, calls] : j["by_kind_per_step"].items()) by_kind += calls.get<double>();
  EXPECT_NEAR(by_kind, j["op_calls_per_step"].get<double>(), 1e-9);
  EXPECT_DOUBLE_EQ(j["by_kind_per_step"]["adam_step"].get<double>(), 1.0);
  // On CUDA gemm_bias, affine_grad and scatter_sum_rows launch two kernels each.
  const auto kinds = j["by_kind_per_step"];
  const double two_launch = kinds.value("gemm_bias", 0.0) + kinds.value("affine_grad", 0.0) +
                            kinds.value("scatter_sum_rows", 0.0);
  EXPECT_GT(two_launch, 0.0);
  EXPECT_NEAR(j["cuda_launches_per_step"].get<double>(),
              j["op_calls_per_step"].get<double>() + two_launch, 1e-9);
}

std::string model_name(const ::testing::TestParamInfo<Model>& info) {
  static const char* const kNames[] = {"tgn", "apan", "jodie"};
  return kNames[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Models, StepCalls,
                         ::testing::Values(Model::tgn, Model::apan, Model::jodie), model_name);

}  // namespace
}  // namespace dbtraintest
