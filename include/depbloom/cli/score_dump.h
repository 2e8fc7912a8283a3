// --eval-only CKPT --scores DIR: every test event's logits as a folder of .npy arrays that
// numpy loads as they are (docs/scores.md): the events (stream row, file row, original src
// and dst ids, time), the positive's logit, the K negatives' logits and their destinations;
// the new-node pass's the same way in DIR/new_nodes/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/cli/npy_folder.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/train/evaluator.h"

namespace depbloom::cli {

class ScoreDump {
 public:
  // Keeps a reference to `stream`, which must outlive it.
  explicit ScoreDump(const data::EventStream& stream) : stream_(stream) {}

  // Collects one batch of the test's transductive or new-node pass (the evaluator's sink).
  void add(const train::ScoredBatch& batch);
  // Writes the arrays into `dir` through a temporary folder beside it, renamed at the end
  // (an existing `dir` is replaced then). Runtime error naming the path on failure.
  void write(const std::string& dir) const;

  int64_t events() const { return static_cast<int64_t>(test_.events.size()); }
  int64_t new_node_events() const { return static_cast<int64_t>(new_nodes_.events.size()); }

 private:
  struct Pass {
    std::vector<int64_t> events;
    std::vector<float> pos, neg;   // [N], [N, k] row-major
    std::vector<int32_t> neg_dst;  // [N, k] row-major, dense ids
    int32_t k = -1;
    void add(const train::ScoredBatch& b);
  };
  void write_pass(NpyFolder& out, const Pass& p, const std::string& prefix) const;

  const data::EventStream& stream_;
  Pass test_, new_nodes_;
};

}  // namespace depbloom::cli
