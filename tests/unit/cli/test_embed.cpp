// depbloom-embed's export (cli::export_embeddings) against the trainer itself: the memory
// and last-update rows it writes at T are, bit for bit, the trainer's node state after its
// evaluation pass over the events with time <= T, from the checkpoint's weights; for T
// before the stream, inside it and beyond it, all nodes or a --nodes list. (Bit for bit with
// the export's one negative per event: more negatives change the memory update's GEMM
// shapes, so the last bits of its rounding, not what is written.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/cli/embed_command.h"
#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"
#include "trained_checkpoint.h"

namespace depbloom::cli {
namespace {
namespace fs = std::filesystem;

std::vector<float> host_floats(const Tensor& t) {
  OwnedTensor host(t.dtype(), t.shape());
  ops::copy(host, t);
  const auto* p = host.view().data<float>();
  return std::vector<float>(p, p + t.numel());
}

class EmbedExport : public TrainedCheckpoint<> {
 protected:
  void SetUp() override {
    make_dir("depbloom-embed-");
    cfg_.set_value("eval.negatives", int64_t{1});
    train_and_save();
  }

  // The embeddings of `nodes` as the sources of query rows at `at` after the stream's
  // events, in one pass without writes (depbloom-stream's `?,v,v,at`).
  std::vector<float> query_embeddings(const std::vector<int32_t>& nodes, double at) {
    const size_t base = stream_.src.size();
    std::vector<int64_t> rows;
    for (const int32_t v : nodes) {
      rows.push_back(static_cast<int64_t>(stream_.src.size()));
      stream_.src.push_back(v), stream_.dst.push_back(v), stream_.ts.push_back(at);
      stream_.event_id.push_back(-1);
    }
    trainer_->stream_batch(rows, {}, 0, false);
    stream_.src.resize(base), stream_.dst.resize(base), stream_.ts.resize(base);
    stream_.event_id.resize(base);
    return host_floats(trainer_->last_step().emb.rows(0, static_cast<int64_t>(nodes.size())));
  }

  // The export's embeddings: the query pass's, bit for bit when the export made it in one
  // batch of eval.batch_size, else the same up to the GEMMs' rounding at other shapes.
  void expect_embeddings_match(const std::string& file, const std::vector<int32_t>& nodes,
                               double at) {
    const std::vector<float> want = query_embeddings(nodes, at);
    const auto got = data::NpyArray::open(file).to_float32();
    ASSERT_EQ(got.size(), want.size());
    const bool one_batch = static_cast<int64_t>(nodes.size()) <= trainer_->config().eval_batch_size;
    int64_t nonzero = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (one_batch)
        EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0) << "value " << i;
      else
        EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << "value " << i;
      nonzero += got[i] != 0.0F;
    }
    EXPECT_GT(nonzero, 0);
  }

  // The trainer's state after its own evaluation pass through T, rows of `nodes`; their
  // embeddings at T.
  void expect_export_matches(double at, const std::vector<int32_t>& nodes,
                             const std::string& nodes_file) {
    EmbedRequest req{ckpt_path_, at, nodes_file, (dir_ / "out").string(), ""};
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
    expect_embeddings_match(req.out + "/embedding.npy", nodes, at);
  }
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
