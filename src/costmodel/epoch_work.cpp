// EpochWorkCollector: per-rank step counts from the forecast's plans, then one replay in
// step order of what each replica holds: a node holds mail on rank r once r mailed it, or
// once any rank mailed it before a sync point that has passed.
#include "depbloom/costmodel/epoch_work.h"

#include <algorithm>

namespace depbloom::costmodel {
using train::BatchPlan;
using train::ScheduledStep;
using train::SyncPoint;

EpochWorkCollector::EpochWorkCollector(int ranks, int64_t nodes, bool memory, bool skip_empty)
    : ranks_(ranks), nodes_(nodes), memory_(memory), skip_empty_(skip_empty) {
  out_.ranks = ranks;
}

EpochWorkCollector::Seen& EpochWorkCollector::seen(int64_t step, int rank) {
  if (step >= out_.steps) {
    out_.steps = step + 1;
    out_.work.resize(static_cast<size_t>(out_.steps * ranks_));
    seen_.resize(out_.work.size());
  }
  return seen_[static_cast<size_t>(step * ranks_ + rank)];
}

void EpochWorkCollector::observe(int rank, const ScheduledStep& step, const BatchPlan& plan) {
  Seen& s = seen(step.index, rank);
  s.exchange = step.sync == SyncPoint::exchange;
  StepWork& w = out_.at(step.index, rank);
  w.exchange = s.exchange;
  w.events = plan.batch();
  w.negatives = plan.negatives_k;
  w.memory_rows = plan.memory_rows();
  w.refined_rows = plan.refined_rows();
  w.refine_terms = plan.refine.terms();
  w.refine_messages = plan.refine.messages();
  w.refine_bases = static_cast<int64_t>(plan.refine.base.size());
  w.refine_gaps = static_cast<int64_t>(plan.refine.dts.size());
  w.sampled_slots = 0;
  for (int32_t h = 0; h < plan.blocks.hops(); ++h) {
    w.sampled_slots += plan.blocks.hop(h).num_slots();
    w.slot_reads[static_cast<size_t>(h)] =
        static_cast<int64_t>(plan.slot_read[static_cast<size_t>(h)].size());
  }
  w.written_rows = static_cast<int64_t>(plan.writes.mem_node.size());
  w.written_mails = plan.writes.mail_count();
  s.reads.assign(plan.mem_node.begin(), plan.mem_node.end());
  s.writes.assign(plan.writes.mem_node.begin(), plan.writes.mem_node.end());
  s.mails.assign(plan.writes.mail_node.begin(), plan.writes.mail_node.end());
}

EpochWork EpochWorkCollector::finish(const dist::CommStats& comm) {
  out_.comm = comm;
  const auto n = static_cast<size_t>(nodes_);
  std::vector<uint8_t> global(n, 0), own(n * static_cast<size_t>(ranks_), 0);
  std::vector<int64_t> read_stamp(n, -1), window_stamp(n, -1);
  std::vector<int32_t> window_mails, window_rows;
  int64_t exchanged = 0, exchanged_urgent = 0;
  for (int64_t i = 0; i < out_.steps; ++i) {
    bool exchange = false;
    for (int r = 0; r < ranks_; ++r) {
      Seen& s = seen(i, r);
      StepWork& w = out_.at(i, r);
      exchange = exchange || s.exchange;
      w.updated_rows = w.memory_rows;
      if (memory_ && skip_empty_) {
        const uint8_t* mine = own.data() + static_cast<size_t>(r) * n;
        w.updated_rows = std::count_if(s.reads.begin(), s.reads.end(), [&](int32_t v) {
          return global[static_cast<size_t>(v)] != 0 || mine[static_cast<size_t>(v)] != 0;
        });
      }
      // Written rows that this rank's next step reads are urgent.
      if (i + 1 < out_.steps) {
        const int64_t stamp = i * ranks_ + r;
        for (const int32_t v : seen(i + 1, r).reads) read_stamp[static_cast<size_t>(v)] = stamp;
        w.urgent_rows = std::count_if(s.writes.begin(), s.writes.end(), [&](int32_t v) {
          return read_stamp[static_cast<size_t>(v)] == stamp;
        });
      }
      w.applied_rows = w.written_rows, w.applied_mails = w.written_mails;
    }
    for (int r = 0; r < ranks_; ++r) {
      const Seen& s = seen(i, r);
      for (const int32_t v : s.mails) own[static_cast<size_t>(r) * n + static_cast<size_t>(v)] = 1;
      window_mails.insert(window_mails.end(), s.mails.begin(), s.mails.end());
      window_rows.insert(window_rows.end(), s.writes.begin(), s.writes.end());
    }
    if (!exchange || ranks_ == 1) continue;
    // A sync point: every replica applies every rank's writes since the last one.
    const auto rows = static_cast<int64_t>(window_rows.size());
    const int64_t mails = static_cast<int64_t>(window_mails.size());
    for (int r = 0; r < ranks_; ++r) {
      out_.at(i, r).applied_rows = rows;
      out_.at(i, r).applied_mails = mails;
    }
    for (const int32_t v : window_mails) global[static_cast<size_t>(v)] = 1;
    // The distinct exchanged nodes, and those any rank's next step reads.
    if (i + 1 < out_.steps)
      for (int r = 0; r < ranks_; ++r)
        for (const int32_t v : seen(i + 1, r).reads) read_stamp[static_cast<size_t>(v)] = -2 - i;
    for (const int32_t v : window_rows) {
      if (window_stamp[static_cast<size_t>(v)] == i) continue;
      window_stamp[static_cast<size_t>(v)] = i;
      exchanged += 1;
      if (read_stamp[static_cast<size_t>(v)] == -2 - i) exchanged_urgent += 1;
    }
    window_mails.clear(), window_rows.clear();
  }
  if (exchanged > 0)
    out_.urgent_exchange_share =
        static_cast<double>(exchanged_urgent) / static_cast<double>(exchanged);
  return out_;
}

}  // namespace depbloom::costmodel
