// The strict strategy's collectives: the gradient all-reduce, and after every step the
// all-gather of every rank's writes, applied in the order the 1-rank step writes them.
#include "depbloom/train/strict_strategy.h"

namespace depbloom::train {

// Per rank: memory rows, root mails, source- and destination-neighbour mails, loss sum.
constexpr int kFields = 5;

double StrictStrategy::reconcile(const StepWrites& w) {
  const int64_t ranks = comm_.size();
  const PlannedWrites* p = w.step->count > 0 ? w.planned : nullptr;
  my_counts_.assign({static_cast<double>(w.writes.mem_count),
                     static_cast<double>(p != nullptr ? p->root_mails : 0),
                     static_cast<double>(p != nullptr ? p->src_nbr_mails : 0),
                     static_cast<double>(p != nullptr ? p->dst_nbr_mails : 0),
                     w.local_loss * static_cast<double>(w.step->count)});
  all_counts_.resize(static_cast<size_t>(kFields * ranks));
  comm_.all_gather(Tensor::wrap(my_counts_.data(), Shape(kFields)),
                   Tensor::wrap(all_counts_.data(), Shape(kFields * ranks)));
  double loss_sum = 0;
  mem_counts_.assign(static_cast<size_t>(ranks), 0);
  mail_counts_.assign(static_cast<size_t>(ranks), 0);
  int64_t mem_total = 0, mail_total = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    const double* c = all_counts_.data() + kFields * r;
    const auto i = static_cast<size_t>(r);
    mem_counts_[i] = static_cast<int64_t>(c[0]);
    mail_counts_[i] = static_cast<int64_t>(c[1] + c[2] + c[3]);
    mem_total += mem_counts_[i];
    mail_total += mail_counts_[i];
    loss_sum += c[4];
  }
  counts_.local_events += w.step->count;
  counts_.exchanged_rows += mem_total;
  counts_.exchanged_mails += mail_total;
  if (w.memory) exchange_and_apply(w, mem_total, mail_total);
  return loss_sum / static_cast<double>(w.step->global_count);
}

// The written rows of every rank, gathered in rank order (which is event order) and applied
// as the 1-rank write-back would: six all-gather-v (memory node ids, rows, times; mail node
// ids, rows, times).
void StrictStrategy::exchange_and_apply(const StepWrites& w, int64_t mem_total,
                                        int64_t mail_total) {
  const int64_t ranks = comm_.size();
  Arena& arena = w.arena->device();
  model::NodeState& state = *w.state;
  const model::WriteSet& mine = w.writes;
  const DType dtype = state.dtype();
  const int64_t d_mem = state.memory_dim(), d_mail = state.mail_dim();
  auto scaled = [&](const std::vector<int64_t>& counts, int64_t by) -> const std::vector<int64_t>& {
    scaled_.assign(counts.begin(), counts.end());
    for (auto& x : scaled_) x *= by;
    return scaled_;
  };
  const Tensor none_f = arena.alloc(dtype, Shape(0));
  auto or_empty = [&](const Tensor& t) { return t.defined() && t.numel() > 0 ? t : none_f; };
  all_mem_node_.resize(static_cast<size_t>(mem_total));
  all_mail_node_.resize(static_cast<size_t>(mail_total));
  int32_t no_node = 0;  // a valid pointer for an empty send
  auto ids = [&](const int32_t* p, int64_t n) {
    return Tensor::wrap(n > 0 ? const_cast<int32_t*>(p) : &no_node, Shape(n));
  };
  model::WriteSet all;
  all.mem_node = all_mem_node_.data();
  all.mem_count = mem_total;
  comm_.all_gather_v(ids(mine.mem_node, mine.mem_count),
                     Tensor::wrap(all_mem_node_.data(), Shape(mem_total)), mem_counts_);
  all.mem_rows = arena.alloc(dtype, Shape(mem_total, d_mem));
  all.mem_time = arena.alloc(dtype, Shape(mem_total));
  comm_.all_gather_v(or_empty(mine.mem_rows).reshape(Shape(mine.mem_count * d_mem)),
                     all.mem_rows.reshape(Shape(mem_total * d_mem)), scaled(mem_counts_, d_mem));
  comm_.all_gather_v(or_empty(mine.mem_time), all.mem_time, mem_counts_);
  comm_.all_gather_v(ids(mine.mail_node, mine.mail_count),
                     Tensor::wrap(all_mail_node_.data(), Shape(mail_total)), mail_counts_);
  all.mail_node = all_mail_node_.data();
  all.mail_count = mail_total;
  all.mail_rows = arena.alloc(dtype, Shape(mail_total, d_mail));
  all.mail_time = arena.alloc(dtype, Shape(mail_total));
  comm_.all_gather_v(or_empty(mine.mail_rows).reshape(Shape(mine.mail_count * d_mail)),
                     all.mail_rows.reshape(Shape(mail_total * d_mail)),
                     scaled(mail_counts_, d_mail));
  comm_.all_gather_v(or_empty(mine.mail_time), all.mail_time, mail_counts_);
  // TGL's mail order over the global step: every endpoint's own mail (rank order is event
  // order), then the sources' neighbour deliveries, then the destinations'.
  mail_order_.clear();
  for (int field = 1; field <= 3; ++field) {
    int64_t base = 0;
    for (int64_t r = 0; r < ranks; ++r) {
      const double* c = all_counts_.data() + kFields * r;
      int64_t begin = base;
      for (int f = 1; f < field; ++f) begin += static_cast<int64_t>(c[f]);
      for (int64_t i = 0; i < static_cast<int64_t>(c[field]); ++i) mail_order_.push_back(begin + i);
      base += mail_counts_[static_cast<size_t>(r)];
    }
  }
  all.mail_order = mail_order_.data();
  apply_writes(w, all);
  const auto width = static_cast<int64_t>(dtype_size(dtype));
  counts_.exchanges += 1;
  counts_.exchange_bytes +=
      mem_total * (4 + (d_mem + 1) * width) + mail_total * (4 + (d_mail + 1) * width);
}

}  // namespace depbloom::train

namespace depbloom::train {

EpochForecast StrictStrategy::forecast(const ForecastInput& in) {
  EpochForecast f;
  const auto total = static_cast<int64_t>(in.train->size());
  int64_t steps = (total + in.batch_size - 1) / in.batch_size;
  if (in.max_steps > 0) steps = std::min(steps, in.max_steps);
  const int64_t vb = in.value_bytes;
  BatchPlan bp;
  for (int64_t b = 0; b < steps; ++b) {
    const int64_t begin = b * in.batch_size, count = std::min(in.batch_size, total - begin);
    f.steps += 1, f.events += count;
    f.counts.local_events += contiguous_part(in.train->data() + begin, count, 0, in.ranks).count;
    f.comm.add(dist::CollectiveKind::all_reduce, in.parameter_bytes, in.pipeline.enabled);
    f.comm.add(dist::CollectiveKind::all_gather, kFields * in.ranks * 8, false);
    if (!in.memory && !in.observe) continue;
    int64_t rows = 0, mails = 0;
    for (int r = 0; r < in.ranks; ++r) {
      ScheduledStep part = contiguous_part(in.train->data() + begin, count, r, in.ranks);
      if (part.count == 0) continue;
      part.index = b, part.sync = SyncPoint::exchange;
      in.plan(bp, part);
      if (in.observe) in.observe(r, part, bp);
      rows += static_cast<int64_t>(bp.writes.mem_node.size());
      mails += bp.writes.mail_count();
    }
    if (!in.memory) continue;
    for (const int64_t bytes : {4 * rows, rows * in.memory_dim * vb, rows * vb, 4 * mails,
                                mails * in.mail_dim * vb, mails * vb})
      f.comm.add(dist::CollectiveKind::all_gather_v, bytes, false);
    f.counts.exchanges += 1;
    f.counts.exchanged_rows += rows;
    f.counts.exchanged_mails += mails;
    f.counts.exchange_bytes +=
        rows * (4 + (in.memory_dim + 1) * vb) + mails * (4 + (in.mail_dim + 1) * vb);
  }
  // Rank 0's write-back: its own parts are its lookahead, every rank's writes are applied.
  Schedule mine;
  for (int64_t b = 0; b < steps; ++b) {
    const int64_t begin = b * in.batch_size, count = std::min(in.batch_size, total - begin);
    ScheduledStep s = contiguous_part(in.train->data() + begin, count, 0, in.ranks);
    s.index = b;
    s.sync = SyncPoint::exchange;
    mine.add(s);
  }
  std::vector<BatchPlan> parts(static_cast<size_t>(in.ranks));
  f.pipeline =
      forecast_write_back(in, mine, false, [&](int64_t b, std::vector<const PlannedWrites*>& out) {
        const int64_t begin = b * in.batch_size;
        const int64_t count = std::min(in.batch_size, total - begin);
        for (int r = 0; r < in.ranks; ++r) {
          const ScheduledStep part = contiguous_part(in.train->data() + begin, count, r, in.ranks);
          if (part.count == 0) continue;
          in.plan(parts[static_cast<size_t>(r)], part);
          out.push_back(&parts[static_cast<size_t>(r)].writes);
        }
      });
  return f;
}

}  // namespace depbloom::train
