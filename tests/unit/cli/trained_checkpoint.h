// The fixture of the tests of the programs that start from a checkpoint (depbloom-embed,
// depbloom-stream): a temporary folder, a trainer over the first 2000 events of cfg_'s
// stream after one epoch of 3 steps with its validation, and that state's checkpoint.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {

// TestBase: ::testing::Test, or TestWithParam<T> for a parameterised fixture.
template <class TestBase = ::testing::Test>
class TrainedCheckpoint : public TestBase {
 protected:
  // The folder first: a test may write its stream file there before setting data.path.
  void make_dir(const std::string& prefix) {
    dir_ = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  // cfg_ holds the test's own options; data.path defaults to the shipped WIKI stream.
  void train_and_save() {
    if (cfg_.config().data.path.empty())
      cfg_.set_value("data.path",
                     std::string(DEPBLOOM_SOURCE_DIR) + "/data/wikipedia/wikipedia_edges.csv");
    cfg_.set_value("data.max_events", int64_t{2000});
    cfg_.set_value("data.cache", false);
    cfg_.set_value("run.max_batches", int64_t{3});
    const RunConfig& c = cfg_.config();
    stream_ = data::load_events(c.data.path, c.load);
    data::keep_first_events(stream_, c.data.max_events);
    split_ = data::make_split(stream_, c.split);
    trainer_ = std::make_unique<train::Trainer>(stream_, split_, trainer_config(c, Device::cpu()));
    trainer_->run_epoch(1);  // trained weights; the state after validation
    ckpt_ = trainer_->save(1, cfg_.dump_yaml());
    ckpt_path_ = (dir_ / "x.ckpt").string();
    write_checkpoint(ckpt_path_, ckpt_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  OptionRegistry cfg_ = depbloom_options();
  std::filesystem::path dir_;
  data::EventStream stream_;
  data::ChronoSplit split_;
  std::unique_ptr<train::Trainer> trainer_;
  Checkpoint ckpt_;
  std::string ckpt_path_;
};

}  // namespace depbloom::cli
