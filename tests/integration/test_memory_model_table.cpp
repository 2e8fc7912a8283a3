// A second memory model added the way docs/design.md's "How to add: a memory model" says: one
// table entry (model::register_memory_model) and its part, here a toy whose memory is a
// linear map of the node's last mail. It must train through the cli's path (the config
// names it, cli::trainer_config, train::fit) with no edit to the runner, strategies or cli,
// and its rules and work must reach the config's keys and the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/core/error.h"
#include "depbloom/costmodel/step_work.h"
#include "depbloom/model/linear.h"
#include "depbloom/model/memory_model.h"
#include "depbloom/train/fit.h"
#include "model/tgnn_parts.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

// updated rows [0, n) = W mail + b for the rows holding mail; the rest keep their memory.
class MailLinearMemory final : public model::MemoryPart {
 public:
  MailLinearMemory(model::ParameterStore& store, const model::TgnnConfig& cfg)
      : d_mail_(cfg.d_mail()), linear_(store, "toy_memory", cfg.d_mail(), cfg.d_mem) {}

  void forward(const Tensor& updated, const model::TgnnInputs& in, const model::MemoryRows& rows,
               bool, Arena&) override {
    const int64_t u = updated.dim(0);
    n_ = in.mem_with_mail < 0 ? u : in.mem_with_mail;
    if (n_ < u) ops::copy(updated.rows(n_, u), rows.memory.rows(n_, u));
    if (n_ > 0)
      linear_.forward(updated.rows(0, n_), ctx_, rows.mail.rows(0, n_).reshape(Shape(n_, d_mail_)));
  }

  void backward(const Tensor& d_updated, Arena&) override {
    if (n_ == 0 || !d_updated.defined()) return;
    linear_.backward(Tensor{}, d_updated.rows(0, n_), ctx_);  // the mail is stored state
  }

 private:
  int64_t d_mail_;
  model::Linear linear_;
  model::LinearContext ctx_;
  int64_t n_ = 0;
};

std::unique_ptr<model::MemoryPart> make_mail_linear(model::ParameterStore& store,
                                                    const model::TgnnConfig& cfg) {
  return std::make_unique<MailLinearMemory>(store, cfg);
}

std::optional<model::ConfigProblem> mail_linear_rules(const model::TgnnConfig& c) {
  if (c.mailbox != 1) return model::ConfigProblem{"mailbox", "the toy reads one mail"};
  if (c.mail_dt_at_event)
    return model::ConfigProblem{"mail_dt_at_event", "the toy reads no mail time"};
  if (c.refine) return model::ConfigProblem{"refine", "the toy has no updater start"};
  return std::nullopt;
}

// One GEMM forward, the weight's gradient backward.
void mail_linear_work(model::WorkSink& s, const model::TgnnConfig& c, int64_t n) {
  s.f(n, c.d_mem, c.d_mail());
  s.b(c.d_mem, c.d_mail(), n);
  s.values(static_cast<double>(n * (c.d_mail() + c.d_mem)), static_cast<double>(n * c.d_mem));
  s.ops(2, 2);
}

model::MemoryKind mail_linear_kind() {
  static const model::MemoryKind kind =
      model::register_memory_model({"mail_linear", &make_mail_linear, model::MemoryPlanFlags{},
                                    &mail_linear_rules, &mail_linear_work, nullptr});
  return kind;
}

// configs/tgn-wiki.yaml with the toy as its memory, and `key` set to `value` when given.
cli::OptionRegistry toy_config(const std::string& key = "", const std::string& value = "") {
  mail_linear_kind();  // registered before the registry lists memory.memory_update's choices
  cli::OptionRegistry cfg = cli::depbloom_options();
  cfg.load_yaml_file(std::string(DEPBLOOM_SOURCE_DIR) + "/configs/tgn-wiki.yaml");
  cfg.apply_set("memory.memory_update=mail_linear");  // as --set does
  if (!key.empty()) cfg.apply_set(key + "=" + value);
  return cfg;
}

std::vector<float> values_of(const Tensor& t) {
  const float* p = t.data<float>();
  return {p, p + t.numel()};
}

TEST(MemoryModelTable, ToyModelTrainsThroughTheCliPath) {
  TrainerConfig tc = cli::trainer_config(toy_config().config(), Device::cpu());
  ASSERT_EQ(tc.model.memory, mail_linear_kind());
  const dbtest::WikiStream wiki = dbtest::load_wiki(2000);
  Trainer trainer(wiki.stream, wiki.split, tc);
  const std::vector<float> w0 = values_of(trainer.parameters().value("toy_memory.weight"));
  const std::vector<float> b0 = values_of(trainer.parameters().value("toy_memory.bias"));
  FitOptions opts;
  opts.epochs = 2;
  const FitResult r = fit(trainer, opts);
  ASSERT_EQ(r.epochs.size(), 2u);
  for (const EpochResult& e : r.epochs) EXPECT_TRUE(std::isfinite(e.loss)) << e.epoch;
  EXPECT_NE(r.epochs[0].loss, r.epochs[1].loss);
  EXPECT_TRUE(r.test.valid);
  // Adam moves a parameter only where its gradient was non-zero.
  EXPECT_NE(values_of(trainer.parameters().value("toy_memory.weight")), w0);
  EXPECT_NE(values_of(trainer.parameters().value("toy_memory.bias")), b0);
}

TEST(MemoryModelTable, ToyModelRulesNameTheConfigKey) {
  try {
    cli::trainer_config(toy_config("memory.mailbox_size", "2").config(), Device::cpu());
    FAIL() << "two mails were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_EQ(e.message(), "memory.mailbox_size: the toy reads one mail");
  }
}

TEST(MemoryModelTable, CostModelCountsTheToyModelsWork) {
  costmodel::WorkModel wm;
  wm.model = cli::trainer_config(toy_config().config(), Device::cpu()).model;
  costmodel::StepWork step;
  step.events = 10, step.memory_rows = 20, step.updated_rows = 8;
  costmodel::StepStageWork work;
  costmodel::step_stage_work(work, wm, step);
  const auto& update = work[static_cast<size_t>(Stage::memory_update)].gemms;
  ASSERT_EQ(update.size(), 1u);
  EXPECT_EQ(update[0].m, 8);
  EXPECT_EQ(update[0].n, wm.model.d_mem);
  EXPECT_EQ(update[0].k, wm.model.d_mail());
}

}  // namespace
}  // namespace depbloom::train
