// Critical-path pipelining with several ranks (mpirun, label mpi): for `strict` and for
// `depbloom` (windows of 3 steps, the last cut short), TGN and APAN (mailbox 3, mails to
// neighbours) on a WIKI prefix in f32, the pipelined run gives the serial run's loss trace,
// validation AP and node state (memory, mails, times, rings) bit for bit on every rank, and
// its side thread did apply rows and every gradient all-reduce was non-blocking (2 and 4
// ranks: MPI does not promise MPI_Iallreduce sums in MPI_Allreduce's order, Open MPI does); rank
// 0's urgent/deferred/sync rows are what --plan's forecast says.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "depbloom/dist/communicator.h"
#include "depbloom/partition/window_plan.h"
#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

const dbtest::WikiStream& wiki() {
  static const dbtest::WikiStream w = dbtest::load_wiki(6000);
  return w;
}

dist::Communicator& world() {
  static std::unique_ptr<dist::Communicator> comm = dist::make_communicator("mpi", Device::cpu());
  return *comm;
}

TrainerConfig config(const char* strategy, bool apan) {
  TrainerConfig c;
  c.batch_size = 200;
  c.model.dropout = 0.1;
  c.strategy.name = strategy;
  c.max_batches = 8;
  c.strategy.partition.window_steps = 3;
  c.strategy.partition.method = partition::metis_available() ? partition::PartitionMethod::metis
                                                             : partition::PartitionMethod::fennel;
  if (apan) {
    c.model.memory = model::MemoryKind::transformer;
    c.model.embedding = model::EmbeddingKind::identity;
    c.model.mailbox = 3;
    c.model.memory_heads = 2;
    c.deliver_to_neighbours = true;
  }
  c.comm = &world();
  return c;
}

void expect_pipeline_is_serial(const char* strategy, bool apan) {
  if (world().size() < 2) GTEST_SKIP() << "needs 2 or more ranks";
  SCOPED_TRACE(testing::Message() << strategy << (apan ? " apan" : " tgn"));
  TrainerConfig off = config(strategy, apan), on = off;
  on.pipeline.enabled = true;
  Trainer serial(wiki().stream, wiki().split, off), pipelined(wiki().stream, wiki().split, on);
  ASSERT_STREQ(pipelined.strategy().name(), strategy);
  const EpochResult a = pipelined.run_epoch(1), b = serial.run_epoch(1);
  EXPECT_EQ(pipelined.loss_trace(), serial.loss_trace());
  EXPECT_EQ(a.val.whole.ap, b.val.whole.ap);
  EXPECT_EQ(a.val_new.whole.ap, b.val_new.whole.ap);
  const model::NodeState &x = pipelined.state(), &y = serial.state();
  const std::pair<const Tensor*, const Tensor*> tensors[] = {{&x.memory(), &y.memory()},
                                                             {&x.mail(), &y.mail()},
                                                             {&x.mail_ts(), &y.mail_ts()},
                                                             {&x.last_update(), &y.last_update()}};
  for (const auto& [p, q] : tensors) EXPECT_EQ(std::memcmp(p->raw(), q->raw(), p->bytes()), 0);
  EXPECT_EQ(x.ring_heads(), y.ring_heads());
  EXPECT_EQ(x.ring_counts(), y.ring_counts());
  EXPECT_GT(a.pipeline.deferred_rows, 0) << "nothing deferred: the test proves little";
  EXPECT_EQ(a.pipeline.urgent_rows + a.pipeline.deferred_rows + a.pipeline.sync_rows,
            b.pipeline.urgent_rows);
  EXPECT_EQ(a.comm.total_calls(), b.comm.total_calls());
  // The gradient all-reduce of every pipelined step is non-blocking, overlapping the
  // write-back.
  EXPECT_EQ(a.comm[dist::CollectiveKind::all_reduce].nonblocking, a.batches);
  EXPECT_EQ(b.comm[dist::CollectiveKind::all_reduce].nonblocking, 0);
  // --plan's forecast of rank 0's write-back (one process, counted ranks) is what it counted.
  TrainerConfig alone = on;
  alone.comm = nullptr;
  const PipelineCounts f =
      Trainer(wiki().stream, wiki().split, alone).forecast_epoch(world().size()).pipeline;
  if (world().rank() == 0) {
    EXPECT_EQ(f.urgent_rows, a.pipeline.urgent_rows);
    EXPECT_EQ(f.deferred_rows, a.pipeline.deferred_rows);
    EXPECT_EQ(f.sync_rows, a.pipeline.sync_rows);
  }
}

TEST(PipelineRanks, StrictTgnEqualsSerial) {
  expect_pipeline_is_serial("strict", false);
}
TEST(PipelineRanks, StrictApanEqualsSerial) {
  expect_pipeline_is_serial("strict", true);
}
TEST(PipelineRanks, DepbloomTgnEqualsSerial) {
  expect_pipeline_is_serial("depbloom", false);
}
TEST(PipelineRanks, DepbloomApanEqualsSerial) {
  expect_pipeline_is_serial("depbloom", true);
}

}  // namespace
}  // namespace depbloom::train
