// ThreadSanitizer suite (label tsan, quickstart.sh test's step 4): the pipelined trainer on
// a WIKI prefix, its side thread applying deferred rows while the main thread's OpenMP team
// plans, stages, gathers and trains the next step. TSan fails the test on any data race;
// the run must also equal the serial one (TGN and APAN, horizon 1, so many rows are
// deferred), which a race would likely break too.
#include <gtest/gtest.h>

#include <cstring>

#include "depbloom/train/trainer.h"
#include "wiki_stream.h"

namespace depbloom::train {
namespace {

const dbtest::WikiStream& wiki() {
  static const dbtest::WikiStream w = dbtest::load_wiki(2500);
  return w;
}

TrainerConfig config(bool apan, bool pipeline) {
  TrainerConfig c;
  c.model.d_mem = c.model.d_emb = 32;
  c.model.d_mem_time = c.model.d_gnn_time = 16;
  c.batch_size = 100;
  c.eval_batch_size = 200;
  c.max_batches = 8;
  c.new_nodes = false;
  c.pipeline.enabled = pipeline;
  c.pipeline.horizon = 1;
  if (apan) {
    c.model.memory = model::MemoryKind::transformer;
    c.model.embedding = model::EmbeddingKind::identity;
    c.model.mailbox = 3;
    c.model.memory_heads = 2;
    c.deliver_to_neighbours = true;
  }
  return c;
}

void expect_pipelined_equals_serial(bool apan) {
  Trainer serial(wiki().stream, wiki().split, config(apan, false));
  Trainer pipelined(wiki().stream, wiki().split, config(apan, true));
  const EpochResult a = pipelined.run_epoch(1), b = serial.run_epoch(1);
  EXPECT_EQ(pipelined.loss_trace(), serial.loss_trace());
  EXPECT_EQ(a.val.whole.ap, b.val.whole.ap);
  const Tensor &x = pipelined.state().memory(), &y = serial.state().memory();
  EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.bytes()), 0);
  EXPECT_GT(a.pipeline.deferred_rows, 0);
}

TEST(PipelineTsan, TgnPipelinedEqualsSerial) {
  expect_pipelined_equals_serial(false);
}

TEST(PipelineTsan, ApanPipelinedEqualsSerial) {
  expect_pipelined_equals_serial(true);
}

}  // namespace
}  // namespace depbloom::train
