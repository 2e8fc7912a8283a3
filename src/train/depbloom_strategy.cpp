// The depbloom strategy: the window plan's schedule, the per-step reductions, and the
// window-end exchange of what each rank wrote (merged by window_exchange.cpp).
#include "depbloom/train/depbloom_strategy.h"

#include <algorithm>
#include <array>

namespace depbloom::train {
namespace {

// Per rank: memory rows, mailed nodes, mails held.
constexpr int kFields = 3;
using DepbloomHeader = std::array<double, kFields>;

DepbloomHeader depbloom_header(int64_t mem_rows, int64_t mail_nodes, int64_t mails) {
  return {static_cast<double>(mem_rows), static_cast<double>(mail_nodes),
          static_cast<double>(mails)};
}

// A (node, claims, sent) triple of ids per mailed node.
SendSizes depbloom_sizes(const double* header) {
  return {static_cast<int64_t>(header[0]), 3 * static_cast<int64_t>(header[1]),
          static_cast<int64_t>(header[2])};
}

}  // namespace

DepbloomStrategy::DepbloomStrategy(dist::Communicator& comm, const data::EventStream& stream,
                                   const partition::PartitionConfig& partition, uint64_t seed)
    : RankedStrategy(comm), stream_(stream), partition_(partition), seed_(seed) {}

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
  const double loss_sum = reduce_loss(*w.step, w.local_loss * static_cast<double>(w.step->count));
  if (w.memory) {
    if (journal_ == nullptr) journal_ = std::make_unique<WindowJournal>(*w.state);
    Arena& arena = w.arena->device();
    journal_->record(w.writes, *w.state, arena);
    apply_writes(w, w.writes);
    if (w.step->sync == SyncPoint::exchange) exchange(w);
  }
  return loss_sum / static_cast<double>(std::max<int64_t>(1, w.step->global_count));
}

// The step's global loss sum, from one all-reduce every step.
double DepbloomStrategy::reduce_loss(const ScheduledStep& step, double local_sum) {
  loss_sum_ = local_sum;
  comm_.all_reduce(Tensor::wrap(&loss_sum_, Shape(1)), dist::ReduceOp::sum);
  counts_.local_events += step.count;
  return loss_sum_;
}

// The window end's collectives (write_gather.h) and their accounting.
const ExchangedRows& DepbloomStrategy::gather(const double* header, const ExchangedRows& mine,
                                              const StateLayout& layout, Arena& arena) {
  gather_.gather_sizes(comm_, header, kFields, &depbloom_sizes);
  const ExchangedRows& all = gather_.gather_rows(comm_, mine, layout, arena);
  counts_.exchanges += 1;
  counts_.exchanged_rows += gather_.totals().mem_rows;
  counts_.exchanged_mails += gather_.totals().mails;
  counts_.exchange_bytes += gather_.bytes(layout);
  return all;
}

// Every rank's contribution gathered in rank order, this rank's window-start rings put back,
// and the whole merged into the replica.
void DepbloomStrategy::exchange(const StepWrites& w) {
  model::NodeState& state = *w.state;
  Arena& arena = w.arena->device();
  const WindowContribution c = journal_->contribution(state, arena);
  ExchangedRows mine;
  mine.mem_node = c.mem_node;
  mine.mail_id = c.mail_triples;
  mine.mem_rows = c.mem_rows, mine.mem_time = c.mem_time;
  mine.mail_rows = c.mail_rows, mine.mail_time = c.mail_time;
  const ExchangedRows& rows = gather(depbloom_header(c.mem_count, c.mail_nodes, c.mails).data(),
                                     mine, state_layout(state), arena);
  WindowWrites all;
  all.mem_counts = gather_.mem_counts();
  all.mail_nodes.resize(static_cast<size_t>(comm_.size()));
  for (int r = 0; r < comm_.size(); ++r)
    all.mail_nodes[static_cast<size_t>(r)] = static_cast<int64_t>(gather_.header(r)[1]);
  all.mem_node = rows.mem_node;
  all.mem_rows = rows.mem_rows, all.mem_time = rows.mem_time;
  all.mail_triples = rows.mail_id;
  all.mail_rows = rows.mail_rows, all.mail_time = rows.mail_time;
  journal_->restore_rings(state, arena);
  merger_.apply(all, state, arena);
  journal_->clear();
}

std::vector<double> DepbloomStrategy::rehearse_plan(const ScheduledStep& step,
                                                    const PlannedWrites* planned, bool memory,
                                                    const StateLayout& layout) {
  if (!memory) return {};
  if (tally_ == nullptr) tally_ = std::make_unique<WindowTally>(stream_.num_nodes);
  if (planned != nullptr) {
    for (const int32_t v : planned->mem_node) tally_->wrote(v);
    for (const int32_t v : planned->mail_node) tally_->claim(v);
  }
  if (step.sync != SyncPoint::exchange) return {};
  const DepbloomHeader header = depbloom_header(static_cast<int64_t>(tally_->mem_nodes().size()),
                                                static_cast<int64_t>(tally_->mail_nodes().size()),
                                                tally_->held_mails(layout.mail_slots));
  rehearsed_.assign(header.begin(), header.end());
  tally_->clear();
  return rehearsed_;
}

void DepbloomStrategy::rehearse_reconcile(const ScheduledStep& step, bool memory,
                                          const StateLayout& layout, Arena& scratch) {
  reduce_loss(step, 0.0);  // the loss is not forecast, its all-reduce is
  if (!memory || step.sync != SyncPoint::exchange) return;
  gather(rehearsed_.data(),
         WriteGather::placeholder(depbloom_sizes(rehearsed_.data()), layout, scratch), layout,
         scratch);
}

}  // namespace depbloom::train
