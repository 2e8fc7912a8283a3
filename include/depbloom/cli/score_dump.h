// --eval-only CKPT --scores DIR: every test event's logits as a folder of .npy arrays that
// numpy loads as they are (docs/scores.md): the events (stream row, file row, original src
// and dst ids, time), the positive's logit, the K negatives' logits and their destinations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/train/evaluator.h"

namespace depbloom::cli {

class ScoreDump {
 public:
  // Keeps a reference to `stream`, which must outlive it.
  explicit ScoreDump(const data::EventStream& stream) : stream_(stream) {}

  // Collects one batch of the transductive test pass (the evaluator's sink; the new-node
  // pass is left out).
  void add(const train::ScoredBatch& batch);
  // Writes the arrays into `dir` through a temporary folder beside it, renamed at the end
  // (an existing `dir` is replaced then). Runtime error naming the path on failure.
  void write(const std::string& dir) const;

  int64_t events() const { return static_cast<int64_t>(events_.size()); }

 private:
  const data::EventStream& stream_;
  std::vector<int64_t> events_;
  std::vector<float> pos_, neg_;  // [N], [N, k] row-major
  std::vector<int32_t> neg_dst_;  // [N, k] row-major, dense ids
  int32_t k_ = -1;
};

}  // namespace depbloom::cli
