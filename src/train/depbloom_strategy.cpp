// The depbloom strategy: the window plan's schedule, the per-step reductions, and the
// window-end exchange of what each rank wrote (merged by window_exchange.cpp).
#include "depbloom/train/depbloom_strategy.h"

#include <algorithm>

namespace depbloom::train {

DepbloomStrategy::DepbloomStrategy(dist::Communicator& comm, const data::EventStream& stream,
                                   const partition::PartitionConfig& partition, uint64_t seed)
    : RankedStrategy(comm), stream_(stream), partition_(partition), seed_(seed) {
  partition::check_partition_config(partition);
}

void window_schedule(Schedule& out, const partition::WindowPlan& plan, int rank, int64_t max_steps,
                     StrategyCounts& counts) {
  out.clear();
  int64_t index = 0;
  for (const partition::PlanWindow& window : plan.windows) {
    if (max_steps > 0 && index >= max_steps) break;
    const partition::WindowPart& mine = window.parts[static_cast<size_t>(rank)];
    for (int64_t s = 0; s < window.steps && (max_steps <= 0 || index < max_steps); ++s) {
      const auto at = static_cast<size_t>(s);
      ScheduledStep step;
      step.index = index++;
      step.events = mine.events.data() + mine.step_offsets[at];
      step.count = mine.step_offsets[at + 1] - mine.step_offsets[at];
      step.first_event = -1;
      for (const partition::WindowPart& part : window.parts) {
        const int64_t n = part.step_offsets[at + 1] - part.step_offsets[at];
        step.global_count += n;
        const int64_t first = n > 0 ? part.events[static_cast<size_t>(part.step_offsets[at])] : -1;
        if (first >= 0 && (step.first_event < 0 || first < step.first_event))
          step.first_event = first;
      }
      step.loss_share = static_cast<double>(step.count) /
                        static_cast<double>(std::max<int64_t>(1, step.global_count));
      const bool last = s + 1 == window.steps || (max_steps > 0 && index == max_steps);
      step.sync = last ? SyncPoint::exchange : SyncPoint::none;
      out.add(step);
    }
    const partition::WindowStats& st = window.stats;
    counts.windows += 1;
    counts.plan_events += window.events;
    counts.cut_events += st.cut_events;
    counts.window_nodes += st.nodes;
    counts.migrated_nodes += st.migrated_nodes;
    counts.max_imbalance = std::max(counts.max_imbalance, st.imbalance);
  }
}

void DepbloomStrategy::schedule(Schedule& out, const std::vector<int64_t>& train,
                                int64_t batch_size, int64_t max_steps) {
  if (!planned_ || plan_train_ != train.data() || plan_size_ != train.size() ||
      plan_batch_ != batch_size) {
    plan_ =
        partition::make_window_plan(stream_, train, comm_.size(), batch_size, partition_, seed_);
    planned_ = true, plan_train_ = train.data(), plan_size_ = train.size();
    plan_batch_ = batch_size;
  }
  window_schedule(out, plan_, comm_.rank(), max_steps, counts_);
}

double DepbloomStrategy::reconcile(const StepWrites& w) {
  loss_sum_ = w.local_loss * static_cast<double>(w.step->count);
  comm_.all_reduce(Tensor::wrap(&loss_sum_, Shape(1)), dist::ReduceOp::sum);
  counts_.local_events += w.step->count;
  if (w.memory) {
    if (journal_ == nullptr) journal_ = std::make_unique<WindowJournal>(*w.state);
    Arena& arena = w.arena->device();
    journal_->record(w.writes, *w.state, arena);
    apply_writes(w, w.writes);
    if (w.step->sync == SyncPoint::exchange) exchange(w);
  }
  return loss_sum_ / static_cast<double>(std::max<int64_t>(1, w.step->global_count));
}

// Every rank's contribution gathered in rank order, this rank's window-start rings put back,
// and the whole merged into the replica.
void DepbloomStrategy::exchange(const StepWrites& w) {
  const int64_t ranks = comm_.size();
  model::NodeState& state = *w.state;
  Arena& arena = w.arena->device();
  const WindowContribution mine = journal_->contribution(state, arena);
  my_sizes_.assign({static_cast<double>(mine.mem_count), static_cast<double>(mine.mail_nodes),
                    static_cast<double>(mine.mails)});
  all_sizes_.resize(static_cast<size_t>(3 * ranks));
  comm_.all_gather(Tensor::wrap(my_sizes_.data(), Shape(3)),
                   Tensor::wrap(all_sizes_.data(), Shape(3 * ranks)));
  mem_counts_.assign(static_cast<size_t>(ranks), 0);
  node_counts_.assign(static_cast<size_t>(ranks), 0);
  mail_counts_.assign(static_cast<size_t>(ranks), 0);
  int64_t mem_total = 0, node_total = 0, mail_total = 0;
  for (size_t r = 0; r < static_cast<size_t>(ranks); ++r) {
    mem_counts_[r] = static_cast<int64_t>(all_sizes_[3 * r]);
    node_counts_[r] = static_cast<int64_t>(all_sizes_[3 * r + 1]);
    mail_counts_[r] = static_cast<int64_t>(all_sizes_[3 * r + 2]);
    mem_total += mem_counts_[r], node_total += node_counts_[r], mail_total += mail_counts_[r];
  }
  auto scaled = [&](const std::vector<int64_t>& counts, int64_t by) -> const std::vector<int64_t>& {
    scaled_.assign(counts.begin(), counts.end());
    for (auto& x : scaled_) x *= by;
    return scaled_;
  };
  int32_t no_id = 0;  // a valid pointer for an empty send
  auto ids = [&](const int32_t* p, int64_t n) {
    return Tensor::wrap(n > 0 ? const_cast<int32_t*>(p) : &no_id, Shape(n));
  };
  const DType dtype = state.dtype();
  const int64_t d_mem = state.memory_dim(), d_mail = state.mail_dim();
  WindowWrites all;
  all.mem_counts = mem_counts_;
  all.mail_nodes = node_counts_;
  all_mem_node_.resize(static_cast<size_t>(std::max<int64_t>(mem_total, 1)));
  all_triples_.resize(static_cast<size_t>(std::max<int64_t>(3 * node_total, 1)));
  comm_.all_gather_v(ids(mine.mem_node, mine.mem_count),
                     Tensor::wrap(all_mem_node_.data(), Shape(mem_total)), mem_counts_);
  all.mem_node = all_mem_node_.data();
  all.mem_rows = arena.alloc(dtype, Shape(mem_total, d_mem));
  all.mem_time = arena.alloc(dtype, Shape(mem_total));
  comm_.all_gather_v(mine.mem_rows.reshape(Shape(mine.mem_count * d_mem)),
                     all.mem_rows.reshape(Shape(mem_total * d_mem)), scaled(mem_counts_, d_mem));
  comm_.all_gather_v(mine.mem_time, all.mem_time, mem_counts_);
  comm_.all_gather_v(ids(mine.mail_triples, 3 * mine.mail_nodes),
                     Tensor::wrap(all_triples_.data(), Shape(3 * node_total)),
                     scaled(node_counts_, 3));
  all.mail_triples = all_triples_.data();
  all.mail_rows = arena.alloc(dtype, Shape(mail_total, d_mail));
  all.mail_time = arena.alloc(dtype, Shape(mail_total));
  comm_.all_gather_v(mine.mail_rows.reshape(Shape(mine.mails * d_mail)),
                     all.mail_rows.reshape(Shape(mail_total * d_mail)),
                     scaled(mail_counts_, d_mail));
  comm_.all_gather_v(mine.mail_time, all.mail_time, mail_counts_);

  journal_->restore_rings(state, arena);
  merger_.apply(all, state, arena);
  journal_->clear();
  const auto width = static_cast<int64_t>(dtype_size(dtype));
  counts_.exchanges += 1;
  counts_.exchanged_rows += mem_total;
  counts_.exchanged_mails += mail_total;
  counts_.exchange_bytes += mem_total * (4 + (d_mem + 1) * width) + node_total * 3 * 4 +
                            mail_total * (d_mail + 1) * width;
}

}  // namespace depbloom::train

namespace depbloom::train {

EpochForecast DepbloomStrategy::forecast(const ForecastInput& in) {
  EpochForecast f;
  const partition::WindowPlan plan = partition::make_window_plan(
      *in.stream, *in.train, in.ranks, in.batch_size, in.partition, in.seed);
  std::vector<Schedule> schedules(static_cast<size_t>(in.ranks));
  StrategyCounts others;
  for (int r = 0; r < in.ranks; ++r)
    window_schedule(schedules[static_cast<size_t>(r)], plan, r, in.max_steps,
                    r == 0 ? f.counts : others);
  const Schedule& first = schedules[0];
  for (int64_t i = 0; i < first.size(); ++i) {
    f.steps += 1, f.events += first.step(i).global_count;
    f.counts.local_events += first.step(i).count;
    f.comm.add(dist::CollectiveKind::all_reduce, in.parameter_bytes, in.pipeline.enabled);
    f.comm.add(dist::CollectiveKind::all_reduce, 8, false);  // the loss
  }
  BatchPlan own;
  f.pipeline =
      forecast_write_back(in, first, true, [&](int64_t i, std::vector<const PlannedWrites*>& out) {
        if (first.step(i).count == 0) return;
        in.plan(own, first.step(i));
        out.push_back(&own.writes);
      });
  if (!in.memory && !in.observe) return f;
  // Per window end, summed over the ranks: memory rows, mailed nodes, mails held.
  struct Sizes {
    int64_t rows = 0, nodes = 0, mails = 0;
  };
  std::vector<Sizes> ends;
  const auto n = static_cast<size_t>(in.stream->num_nodes);
  std::vector<uint8_t> wrote(n, 0);
  std::vector<int32_t> claims(n, 0), touched;
  BatchPlan bp;
  for (int rank = 0; rank < in.ranks; ++rank) {
    const Schedule& mine = schedules[static_cast<size_t>(rank)];
    size_t end = 0;
    for (int64_t i = 0; i < mine.size(); ++i) {
      const ScheduledStep& step = mine.step(i);
      if (step.count > 0) {
        in.plan(bp, step);
        if (in.observe) in.observe(rank, step, bp);
        for (const int32_t v : bp.writes.mem_node) wrote[static_cast<size_t>(v)] = 1;
        for (const int32_t v : bp.writes.mail_node)
          if (claims[static_cast<size_t>(v)]++ == 0) touched.push_back(v);
        for (const int32_t v : bp.writes.mem_node) touched.push_back(v);
      }
      if (step.sync != SyncPoint::exchange) continue;
      if (ends.size() <= end) ends.resize(end + 1);
      Sizes& sz = ends[end++];
      for (const int32_t v : touched) {
        const auto k = static_cast<size_t>(v);
        if (wrote[k] != 0) sz.rows += 1, wrote[k] = 0;
        if (claims[k] > 0) sz.nodes += 1, sz.mails += std::min(claims[k], in.mail_slots);
        claims[k] = 0;
      }
      touched.clear();
    }
  }
  if (!in.memory) return f;
  const int64_t vb = in.value_bytes;
  for (const Sizes& sz : ends) {
    f.comm.add(dist::CollectiveKind::all_gather, 3 * in.ranks * 8, false);
    for (const int64_t bytes : {4 * sz.rows, sz.rows * in.memory_dim * vb, sz.rows * vb,
                                12 * sz.nodes, sz.mails * in.mail_dim * vb, sz.mails * vb})
      f.comm.add(dist::CollectiveKind::all_gather_v, bytes, false);
    f.counts.exchanges += 1;
    f.counts.exchanged_rows += sz.rows;
    f.counts.exchanged_mails += sz.mails;
    f.counts.exchange_bytes += sz.rows * (4 + (in.memory_dim + 1) * vb) + sz.nodes * 12 +
                               sz.mails * (in.mail_dim + 1) * vb;
  }
  return f;
}

}  // namespace depbloom::train
