// The strategies: single-device training and the `strict` data-parallel baseline (how a
// global batch is sliced among the ranks, and the per-step exchange that keeps every rank's
// node state equal to the 1-rank state).
#include "depbloom/train/strategy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "depbloom/core/error.h"

namespace depbloom::train {

Slice contiguous_slice(const int64_t* events, int64_t count, int rank, int ranks) {
  DB_ASSERT(ranks >= 1 && rank >= 0 && rank < ranks && count >= 0, "slice {} of {} ranks", rank,
            ranks);
  const int64_t lo = rank * count / ranks, hi = (rank + 1) * count / ranks;
  Slice s;
  s.events = events + lo;
  s.count = hi - lo;
  s.loss_share = count > 0 ? static_cast<double>(s.count) / static_cast<double>(count) : 0.0;
  return s;
}

Slice SingleDeviceStrategy::slice(const int64_t* events, int64_t count) const {
  Slice s;
  s.events = events;
  s.count = count;
  s.loss_share = 1.0;  // exact: the step's loss gradient stays TGL's 2.0
  return s;
}

double SingleDeviceStrategy::reconcile(const StepOutputs& out) {
  out.planner->write_back(*out.arena, *out.state, out.updated, out.edge_feat, out.row_last_update);
  counts_.local_events += out.local_count;
  return out.local_loss;
}

void StrictStrategy::sync_parameters(model::ParameterStore& store) {
  // The same seed gives every rank the same parameters; rank 0's win regardless.
  comm_.broadcast(store.values(), 0);
}

Slice StrictStrategy::slice(const int64_t* events, int64_t count) const {
  return contiguous_slice(events, count, comm_.rank(), comm_.size());
}

void StrictStrategy::reduce_gradients(model::ParameterStore& store) {
  // Each rank's loss was scaled by its share of the batch: the sum is the 1-rank gradient.
  comm_.all_reduce(store.grads(), dist::ReduceOp::sum);
}

// Per rank: memory rows, root mails, source- and destination-neighbour mails, loss sum.
constexpr int kFields = 5;

double StrictStrategy::reconcile(const StepOutputs& out) {
  const int64_t ranks = comm_.size();
  BatchPlanner::Writes w;
  if (out.local_count > 0)
    w = out.planner->collect_writes(*out.arena, *out.state, out.updated, out.edge_feat,
                                    out.row_last_update);
  my_counts_.assign({static_cast<double>(w.mem_count), static_cast<double>(w.root_mails),
                     static_cast<double>(w.src_nbr_mails), static_cast<double>(w.dst_nbr_mails),
                     out.local_loss * static_cast<double>(out.local_count)});
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
  counts_.local_events += out.local_count;
  counts_.exchanged_rows += mem_total;
  counts_.exchanged_mails += mail_total;
  if (out.memory) exchange_and_apply(out, w, mem_total, mail_total);
  return loss_sum / static_cast<double>(out.global_count);
}

// The written rows of every rank, gathered in rank order (which is event order) and applied
// as the 1-rank write-back would: six all-gather-v (memory node ids, rows, times; mail node
// ids, rows, times).
void StrictStrategy::exchange_and_apply(const StepOutputs& out, const BatchPlanner::Writes& w,
                                        int64_t mem_total, int64_t mail_total) {
  const int64_t ranks = comm_.size();
  Arena& arena = *out.arena;
  model::NodeState& state = *out.state;
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
  comm_.all_gather_v(Tensor::wrap(w.mem_count > 0 ? const_cast<int32_t*>(w.mem_node) : &no_node,
                                  Shape(w.mem_count)),
                     Tensor::wrap(all_mem_node_.data(), Shape(mem_total)), mem_counts_);
  Tensor mem_rows = arena.alloc(dtype, Shape(mem_total, d_mem));
  Tensor mem_time = arena.alloc(dtype, Shape(mem_total));
  comm_.all_gather_v(or_empty(w.mem_rows).reshape(Shape(w.mem_count * d_mem)),
                     mem_rows.reshape(Shape(mem_total * d_mem)), scaled(mem_counts_, d_mem));
  comm_.all_gather_v(or_empty(w.mem_time), mem_time, mem_counts_);
  const int64_t my_mails = w.mail_count();
  comm_.all_gather_v(
      Tensor::wrap(my_mails > 0 ? const_cast<int32_t*>(w.mail_node) : &no_node, Shape(my_mails)),
      Tensor::wrap(all_mail_node_.data(), Shape(mail_total)), mail_counts_);
  Tensor mail_rows = arena.alloc(dtype, Shape(mail_total, d_mail));
  Tensor mail_time = arena.alloc(dtype, Shape(mail_total));
  comm_.all_gather_v(or_empty(w.mail_rows).reshape(Shape(my_mails * d_mail)),
                     mail_rows.reshape(Shape(mail_total * d_mail)), scaled(mail_counts_, d_mail));
  comm_.all_gather_v(or_empty(w.mail_time), mail_time, mail_counts_);
  // TGL's mail order over the global batch: every endpoint's own mail (rank order is event
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
  out.planner->apply_writes(arena, state, all_mem_node_.data(), mem_total, mem_rows, mem_time,
                            all_mail_node_.data(), mail_order_.data(), mail_total, mail_rows,
                            mail_time);
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"strict"};
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, dist::Communicator* comm) {
  const auto& names = strategy_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    DB_THROW(config, "strategy.name: unknown strategy '{}' (one of: {})", name,
             fmt::join(names, ", "));
  // With one rank there is nothing to split or exchange: every strategy is the single-device
  // step (the P = 1 rule), and makes no collective. One rank over an mpi or nccl
  // communicator (named in the config) still runs the strategy, collectives included: the
  // same numbers, and a smoke test of that communicator.
  if (comm == nullptr || (comm->size() <= 1 && std::string(comm->name()) == "local"))
    return std::make_unique<SingleDeviceStrategy>();
  return std::make_unique<StrictStrategy>(*comm);
}

}  // namespace depbloom::train
