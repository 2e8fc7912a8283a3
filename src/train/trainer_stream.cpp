// The Trainer's streaming side (depbloom-stream, docs/streaming.md): events appended to the
// stream after construction join the evaluation neighbour lists and the edge features, and
// one evaluation batch runs with the negatives its caller gives.
#include "depbloom/backend/ops.h"
#include "depbloom/train/trainer.h"

namespace depbloom::train {

void Trainer::copy_edge_rows(int64_t begin, int64_t end) {
  const int64_t d = stream_.edge_dim;
  if (d == 0 || end <= begin) return;
  if (end > edge_feat_.view().dim(0))
    DB_THROW(data, "{}: {} events, room for {} (stream.event_capacity)", stream_.source, end,
             edge_feat_.view().dim(0));
  const Shape shape(end - begin, d);
  const float* from = stream_.edge_feat.data() + begin * d;
  const Tensor to = edge_feat_.view().rows(begin, end);
  if (cfg_.dtype == DType::f32) {
    ops::copy(to, Tensor::wrap(const_cast<float*>(from), shape));
  } else {
    std::vector<double> wide(from, from + (end - begin) * d);
    ops::copy(to, Tensor::wrap(wide.data(), shape));
  }
  edge_rows_ = end;
}

void Trainer::grow_stream(int64_t graph_events) {
  writer_->flush();
  copy_edge_rows(edge_rows_, graph_events);
  // A rebuild over the grown prefix (the samplers keep their reference to full_csr_).
  full_csr_ = graph::TemporalCsr::build(stream_, graph_events);
}

const std::vector<float>& Trainer::stream_batch(const std::vector<int64_t>& rows,
                                                const std::vector<int32_t>& negatives, int32_t k,
                                                bool apply) {
  writer_->flush();
  DB_ASSERT(!rows.empty() &&
                static_cast<int64_t>(negatives.size()) == k * static_cast<int64_t>(rows.size()),
            "stream batch: {} rows, {} negatives for k = {}", rows.size(), negatives.size(), k);
  ScheduledStep batch;
  batch.index = -1;
  batch.events = rows.data();
  batch.count = batch.global_count = static_cast<int64_t>(rows.size());
  batch.first_event = rows.front();
  StepData& cur = steps_->current();
  cur.negatives = negatives.data();
  cur.negatives_k = k;
  StepData& d = steps_->run(batch, 0, Pass::evaluate, apply ? kEvaluationStages : kForwardStages);
  d.step = nullptr;  // `batch` ends here
  d.negatives = nullptr;
  d.negatives_k = -1;
  return runner_->scores();
}

}  // namespace depbloom::train
