// depbloom-embed's export (cli::export_embeddings) against the trainer itself: the memory
// and last-update rows it writes at T are, bit for bit, the trainer's node state after its
// evaluation pass over the events with time <= T, from the checkpoint's weights; for T
// before the stream, inside it and beyond it, all nodes or a --nodes list. (Bit for bit with
// the export's one negative per event: more negatives change the memory update's GEMM
// shapes, so the last bits of its rounding, not what is written.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

#include "depbloom/backend/ops.h"
#include "depbloom/cli/embed_command.h"
#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/npy.h"
#include "depbloom/data/split.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {
namespace {
namespace fs = std::filesystem;

std::vector<float> host_floats(const Tensor& t) {
  OwnedTensor host(t.dtype(), t.shape());
  ops::copy(host, t);
  const auto* p = host.view().data<float>();
  return std::vector<float>(p, p + t.numel());
}

class EmbedExport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("depbloom-embed-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cfg_.set_value("data.path",
                   std::string(DEPBLOOM_SOURCE_DIR) + "/data/wikipedia/wikipedia_edges.csv");
    cfg_.set_value("data.max_events", int64_t{2000});
    cfg_.set_value("data.cache", false);
    cfg_.set_value("eval.negatives", int64_t{1});
    cfg_.set_value("run.max_batches", int64_t{3});
    const RunConfig& c = cfg_.config();
    stream_ = data::load_events(c.data.path, c.load);
    data::keep_first_events(stream_, c.data.max_events);
    split_ = data::make_split(stream_, c.split);
    trainer_ = std::make_unique<train::Trainer>(stream_, split_, trainer_config(c, Device::cpu()));
    trainer_->train_epoch(1);  // weights and a state that are not the initial ones
    ckpt_ = trainer_->save(1, cfg_.dump_yaml());
    write_checkpoint((dir_ / "x.ckpt").string(), ckpt_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The trainer's state after its own evaluation pass through T, rows of `nodes`.
  void expect_export_matches(double at, const std::vector<int32_t>& nodes,
                             const std::string& nodes_file) {
    EmbedRequest req{(dir_ / "x.ckpt").string(), at, nodes_file, (dir_ / "out").string(), ""};
    const EmbedResult r = export_embeddings(req);
    const auto end =
        std::upper_bound(stream_.ts.begin(), stream_.ts.end(), at) - stream_.ts.begin();
    EXPECT_EQ(r.events, end);
    trainer_->load(ckpt_);
    std::vector<int64_t> events(static_cast<size_t>(end));
    std::iota(events.begin(), events.end(), int64_t{0});
    trainer_->replay(events, trainer_->config().eval_batch_size);
    const auto d = static_cast<size_t>(trainer_->state().memory_dim());
    const std::vector<float> memory = host_floats(trainer_->state().memory());
    const std::vector<float> last = host_floats(trainer_->state().last_update());
    const auto got_memory = data::NpyArray::open(req.out + "/memory.npy").to_float32();
    const auto got_last = data::NpyArray::open(req.out + "/last_update.npy").to_float32();
    const auto got_ids = data::NpyArray::open(req.out + "/ids.npy").to_int64();
    ASSERT_EQ(got_memory.size(), nodes.size() * d);
    ASSERT_EQ(got_ids.size(), nodes.size());
    int64_t nonzero = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto v = static_cast<size_t>(nodes[i]);
      EXPECT_EQ(got_ids[i], stream_.original_id[v]) << "row " << i;
      EXPECT_EQ(std::memcmp(&got_memory[i * d], &memory[v * d], sizeof(float) * d), 0)
          << "memory of node " << v << " at T " << at;
      EXPECT_EQ(std::memcmp(&got_last[i], &last[v], sizeof(float)), 0) << "node " << v;
      nonzero += got_last[i] != 0.0F || got_memory[i * d] != 0.0F;
    }
    // Only a replay that touched nothing leaves every row zero.
    EXPECT_EQ(nonzero > 0, end > 0) << "T " << at;
  }

  OptionRegistry cfg_ = depbloom_options();
  fs::path dir_;
  data::EventStream stream_;
  data::ChronoSplit split_;
  std::unique_ptr<train::Trainer> trainer_;
  Checkpoint ckpt_;
};

TEST_F(EmbedExport, MemoryAtTIsTheTrainersStateAfterEvaluatingThroughT) {
  std::vector<int32_t> all(static_cast<size_t>(stream_.num_nodes));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  const double inside = stream_.ts[1234], last = stream_.ts.back();
  for (const double at : {-1.0, inside, last + 1e6}) expect_export_matches(at, all, "");
}

TEST_F(EmbedExport, ANodesFileSelectsRowsInItsOrder) {
  // Original ids: a user and an item (WIKI's items are numbered after its users).
  const int32_t user = stream_.src[5], item = stream_.dst[700];
  std::ofstream((dir_ / "nodes.txt").string())
      << stream_.original_id[static_cast<size_t>(item)] << "\n\n  "
      << stream_.original_id[static_cast<size_t>(user)] << " \n";
  expect_export_matches(stream_.ts[1500], {item, user}, (dir_ / "nodes.txt").string());
}

TEST(EmbedTime, OnlyAFiniteNumberIsATime) {
  EXPECT_EQ(parse_time("2.5e3"), 2500.0);
  EXPECT_EQ(parse_time("-7"), -7.0);
  for (const char* bad : {"", "nan", "inf", "12abc", "abc", "1e999"}) {
    try {
      parse_time(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
      EXPECT_NE(e.message().find("--at"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace depbloom::cli
