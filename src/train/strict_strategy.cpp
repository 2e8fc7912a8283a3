// The strict strategy's collectives: the gradient all-reduce, and after every step the
// all-gather of every rank's writes (write_gather.h), applied in the order the 1-rank step
// writes them.
#include "depbloom/train/strict_strategy.h"

#include <array>

namespace depbloom::train {
namespace {

// Per rank: memory rows, root mails, source- and destination-neighbour mails, loss sum.
constexpr int kFields = 5;

// A fixed-size header: reconcile() runs every step and allocates nothing.
using StrictHeader = std::array<double, kFields>;

StrictHeader strict_header(int64_t mem_rows, const PlannedWrites* p, double loss_sum) {
  return {static_cast<double>(mem_rows), static_cast<double>(p != nullptr ? p->root_mails : 0),
          static_cast<double>(p != nullptr ? p->src_nbr_mails : 0),
          static_cast<double>(p != nullptr ? p->dst_nbr_mails : 0), loss_sum};
}

// One node id per mail.
SendSizes strict_sizes(const double* header) {
  const auto mails = static_cast<int64_t>(header[1] + header[2] + header[3]);
  return {static_cast<int64_t>(header[0]), mails, mails};
}

}  // namespace

double StrictStrategy::reconcile(const StepWrites& w) {
  const PlannedWrites* p = w.step->count > 0 ? w.planned : nullptr;
  const model::WriteSet& writes = w.writes;
  ExchangedRows mine;
  mine.mem_node = writes.mem_node;
  mine.mail_id = writes.mail_node;
  mine.mem_rows = writes.mem_rows, mine.mem_time = writes.mem_time;
  mine.mail_rows = writes.mail_rows, mine.mail_time = writes.mail_time;
  const StateLayout layout = state_layout(*w.state);
  const ExchangedRows* all = exchange(
      *w.step,
      strict_header(writes.mem_count, p, w.local_loss * static_cast<double>(w.step->count)).data(),
      w.memory ? &mine : nullptr, layout, w.arena->device());
  if (all != nullptr) apply_gathered(w, *all);
  double loss_sum = 0;
  for (int r = 0; r < comm_.size(); ++r) loss_sum += gather_.header(r)[4];
  return loss_sum / static_cast<double>(w.step->global_count);
}

// The size all-gather after every step and, with memory, the six all-gather-v of `mine`;
// the accounting of both. Returns the gathered rows (null without memory).
const ExchangedRows* StrictStrategy::exchange(const ScheduledStep& step, const double* header,
                                              const ExchangedRows* mine, const StateLayout& layout,
                                              Arena& arena) {
  gather_.gather_sizes(comm_, header, kFields, &strict_sizes);
  counts_.local_events += step.count;
  counts_.exchanged_rows += gather_.totals().mem_rows;
  counts_.exchanged_mails += gather_.totals().mails;
  if (mine == nullptr) return nullptr;
  const ExchangedRows& all = gather_.gather_rows(comm_, *mine, layout, arena);
  counts_.exchanges += 1;
  counts_.exchange_bytes += gather_.bytes(layout);
  return &all;
}

// Every rank's written rows, gathered in rank order (which is event order), applied as the
// 1-rank write-back would.
void StrictStrategy::apply_gathered(const StepWrites& w, const ExchangedRows& rows) {
  const int ranks = comm_.size();
  model::WriteSet all;
  all.mem_node = rows.mem_node;
  all.mem_count = gather_.totals().mem_rows;
  all.mem_rows = rows.mem_rows, all.mem_time = rows.mem_time;
  all.mail_node = rows.mail_id;
  all.mail_count = gather_.totals().mails;
  all.mail_rows = rows.mail_rows, all.mail_time = rows.mail_time;
  // TGL's mail order over the global step: every endpoint's own mail (rank order is event
  // order), then the sources' neighbour deliveries, then the destinations'.
  mail_order_.clear();
  for (int field = 1; field <= 3; ++field) {
    int64_t base = 0;
    for (int r = 0; r < ranks; ++r) {
      const double* c = gather_.header(r);
      int64_t begin = base;
      for (int f = 1; f < field; ++f) begin += static_cast<int64_t>(c[f]);
      for (int64_t i = 0; i < static_cast<int64_t>(c[field]); ++i) mail_order_.push_back(begin + i);
      base += gather_.mail_counts()[static_cast<size_t>(r)];
    }
  }
  all.mail_order = mail_order_.data();
  apply_writes(w, all);
}

std::vector<double> StrictStrategy::rehearse_plan(const ScheduledStep& /*step*/,
                                                  const PlannedWrites* planned, bool memory,
                                                  const StateLayout& /*layout*/) {
  const int64_t rows =
      memory && planned != nullptr ? static_cast<int64_t>(planned->mem_node.size()) : 0;
  const StrictHeader header = strict_header(rows, planned, 0.0);  // the loss is not forecast
  rehearsed_.assign(header.begin(), header.end());
  return rehearsed_;
}

void StrictStrategy::rehearse_reconcile(const ScheduledStep& step, bool memory,
                                        const StateLayout& layout, Arena& scratch) {
  const ExchangedRows mine =
      WriteGather::placeholder(strict_sizes(rehearsed_.data()), layout, scratch);
  exchange(step, rehearsed_.data(), memory ? &mine : nullptr, layout, scratch);
}

}  // namespace depbloom::train
