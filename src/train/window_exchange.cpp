// WindowJournal and WindowMerger: one rank's record of its window writes, and the merge of
// every rank's at the window end (window_exchange.h states the rules).
#include "depbloom/train/window_exchange.h"

#include <algorithm>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/backend/upload.h"

namespace depbloom::train {
namespace {

// A [n] time tensor (f32 or f64, any device) into host doubles.
void times_to_host(const Tensor& t, std::vector<double>& out, std::vector<float>& narrow) {
  const int64_t n = t.defined() ? t.numel() : 0;
  out.resize(static_cast<size_t>(n));
  if (n == 0) return;
  if (t.dtype() == DType::f64) {
    ops::copy(Tensor::wrap(out.data(), Shape(n)), t.flat());
  } else {
    narrow.resize(static_cast<size_t>(n));
    ops::copy(Tensor::wrap(narrow.data(), Shape(n)), t.flat());
    std::copy(narrow.begin(), narrow.end(), out.begin());
  }
  if (t.device().is_cuda()) backend::synchronize(t.device().index);
}

}  // namespace

WindowTally::WindowTally(int64_t num_nodes)
    : wrote_memory_(static_cast<size_t>(num_nodes), 0),
      claims_(static_cast<size_t>(num_nodes), 0) {}

void WindowTally::wrote(int32_t node) {
  if (wrote_memory_[static_cast<size_t>(node)] != 0) return;
  wrote_memory_[static_cast<size_t>(node)] = 1;
  mem_node_.push_back(node);
}

bool WindowTally::claim(int32_t node) {
  if (claims_[static_cast<size_t>(node)]++ != 0) return false;
  mail_node_.push_back(node);
  return true;
}

int64_t WindowTally::held_mails(int slots) const {
  int64_t held = 0;
  for (const int32_t node : mail_node_) held += std::min(claims(node), slots);
  return held;
}

void WindowTally::clear() {
  for (const int32_t node : mem_node_) wrote_memory_[static_cast<size_t>(node)] = 0;
  for (const int32_t node : mail_node_) claims_[static_cast<size_t>(node)] = 0;
  mem_node_.clear(), mail_node_.clear();
}

WindowJournal::WindowJournal(const model::NodeState& state)
    : slots_(state.mail_slots()), tally_(state.num_nodes()) {}

void WindowJournal::record(const model::WriteSet& writes, const model::NodeState& state,
                           Arena& arena) {
  for (int64_t i = 0; i < writes.mem_count; ++i) tally_.wrote(writes.mem_node[i]);
  const auto first_new = static_cast<int64_t>(tally_.mail_nodes().size());
  for (int64_t i = 0; i < writes.mail_count; ++i) {
    const int32_t node = writes.mail_node[i];
    if (tally_.claim(node)) {
      start_head_.push_back(state.ring_head(node));
      start_count_.push_back(state.mail_count(node));
    }
  }
  save_rings(state, first_new, arena);
}

// The rings of the mailed nodes [first, end) as they are now (before this step's apply).
void WindowJournal::save_rings(const model::NodeState& state, int64_t first, Arena& arena) {
  const std::vector<int32_t>& mail_node = tally_.mail_nodes();
  const auto end = static_cast<int64_t>(mail_node.size());
  if (end == first) return;
  const int64_t capacity = start_mail_.view().defined() ? start_mail_.shape()[0] : 0;
  if (end > capacity) {  // grows by doubling: a few times in a run, never in a warm window
    const int64_t grown = std::max<int64_t>({end, 2 * capacity, 256});
    OwnedTensor mail(state.dtype(), Shape(grown, slots_, state.mail_dim()), state.device());
    OwnedTensor ts(state.dtype(), Shape(grown, slots_), state.device());
    if (first > 0) {
      ops::copy(mail.view().rows(0, first), start_mail_.view().rows(0, first));
      ops::copy(ts.view().rows(0, first), start_ts_.view().rows(0, first));
    }
    start_mail_ = std::move(mail);
    start_ts_ = std::move(ts);
  }
  const Tensor idx = upload(arena, mail_node.data() + first, Shape(end - first));
  model::MemoryRows out;
  out.mail = start_mail_.view().rows(first, end);
  out.mail_ts = start_ts_.view().rows(first, end);
  state.gather(out, idx);
}

WindowContribution WindowJournal::contribution(const model::NodeState& state, Arena& arena) {
  WindowContribution c;
  const DType dtype = state.dtype();
  const std::vector<int32_t>& mem_node = tally_.mem_nodes();
  c.mem_count = static_cast<int64_t>(mem_node.size());
  c.mem_node = mem_node.data();
  c.mem_rows = arena.alloc(dtype, Shape(c.mem_count, state.memory_dim()));
  c.mem_time = arena.alloc(dtype, Shape(c.mem_count));
  if (c.mem_count > 0) {
    const Tensor idx = upload(arena, mem_node.data(), Shape(c.mem_count));
    model::MemoryRows out;
    out.memory = c.mem_rows;
    out.last_update = c.mem_time;
    state.gather(out, idx);
  }
  // Each mailed node's window mails still in its ring: the newest min(claims, slots) slots,
  // oldest first (claim order).
  triples_.clear(), flat_.clear();
  for (const int32_t node : tally_.mail_nodes()) {
    const int32_t claims = tally_.claims(node);
    const int32_t sent = std::min(claims, slots_);
    triples_.insert(triples_.end(), {node, claims, sent});
    const int head = state.ring_head(node);
    for (int32_t j = 0; j < sent; ++j)
      flat_.push_back(node * slots_ + (head - sent + j + 2 * slots_) % slots_);
  }
  c.mail_nodes = static_cast<int64_t>(tally_.mail_nodes().size());
  c.mail_triples = triples_.data();
  c.mails = static_cast<int64_t>(flat_.size());
  c.mail_rows = arena.alloc(dtype, Shape(c.mails, state.mail_dim()));
  c.mail_time = arena.alloc(dtype, Shape(c.mails));
  if (c.mails > 0) {
    const int64_t n = state.num_nodes() * slots_;
    const Tensor idx = upload(arena, flat_.data(), Shape(c.mails));
    ops::copy_rows({{c.mail_rows, state.mail().reshape(Shape(n, state.mail_dim()))},
                    {c.mail_time, state.mail_ts().reshape(Shape(n))}},
                   Tensor{}, idx);
  }
  return c;
}

void WindowJournal::restore_rings(model::NodeState& state, Arena& arena) {
  const std::vector<int32_t>& mail_node = tally_.mail_nodes();
  const auto nodes = static_cast<int64_t>(mail_node.size());
  if (nodes == 0) return;
  flat_.clear();
  for (const int32_t node : mail_node)
    for (int s = 0; s < slots_; ++s) flat_.push_back(node * slots_ + s);
  const int64_t rows = nodes * slots_;
  state.write_mail(start_mail_.view().rows(0, nodes).reshape(Shape(rows, state.mail_dim())),
                   start_ts_.view().rows(0, nodes).reshape(Shape(rows)),
                   upload(arena, flat_.data(), Shape(rows)));
  for (int64_t i = 0; i < nodes; ++i)
    state.set_ring(mail_node[static_cast<size_t>(i)], start_head_[static_cast<size_t>(i)],
                   start_count_[static_cast<size_t>(i)]);
}

void WindowJournal::clear() {
  tally_.clear();
  start_head_.clear(), start_count_.clear();
}

int64_t WindowMerger::apply(const WindowWrites& all, model::NodeState& state, Arena& arena) {
  const int ranks = all.ranks();
  const auto nodes = static_cast<size_t>(state.num_nodes());
  if (best_stamp_.size() != nodes) best_stamp_.assign(nodes, 0), best_.assign(nodes, 0);
  if (++stamp_ == 0) std::fill(best_stamp_.begin(), best_stamp_.end(), 0), stamp_ = 1;

  // Memory: per node the newest update time; rank order makes the lower rank win a tie.
  times_to_host(all.mem_time, mem_time_, narrow_);
  win_node_.clear(), mem_win_.clear();
  const auto mem_total = static_cast<int64_t>(mem_time_.size());
  for (int64_t i = 0; i < mem_total; ++i) {
    const auto node = static_cast<size_t>(all.mem_node[i]);
    if (best_stamp_[node] != stamp_) {
      best_stamp_[node] = stamp_;
      best_[node] = static_cast<int64_t>(mem_win_.size());
      mem_win_.push_back(i);
      win_node_.push_back(all.mem_node[i]);
    } else if (mem_time_[static_cast<size_t>(i)] >
               mem_time_[static_cast<size_t>(mem_win_[static_cast<size_t>(best_[node])])]) {
      mem_win_[static_cast<size_t>(best_[node])] = i;
    }
  }
  model::WriteSet w;
  w.mem_count = static_cast<int64_t>(mem_win_.size());
  w.mem_node = win_node_.data();
  if (w.mem_count > 0) {
    const Tensor idx = upload(arena, mem_win_.data(), Shape(w.mem_count));
    w.mem_rows = arena.alloc(state.dtype(), Shape(w.mem_count, state.memory_dim()));
    w.mem_time = arena.alloc(state.dtype(), Shape(w.mem_count));
    ops::gather_rows(w.mem_rows, all.mem_rows, idx);
    ops::gather_rows(w.mem_time.reshape(Shape(w.mem_count, 1)),
                     all.mem_time.reshape(Shape(mem_total, 1)), idx);
  }

  // Mails: one run per (rank, node), grouped by node in rank order.
  runs_.clear();
  int64_t offset = 0, triple = 0;
  for (int r = 0; r < ranks; ++r)
    for (int64_t i = 0; i < all.mail_nodes[static_cast<size_t>(r)]; ++i, ++triple) {
      const int32_t* t = all.mail_triples + 3 * triple;
      runs_.push_back({t[0], r, t[1], t[2], offset});
      offset += t[2];
    }
  std::sort(runs_.begin(), runs_.end(), [](const MailRun& a, const MailRun& b) {
    return a.node != b.node ? a.node < b.node : a.rank < b.rank;
  });
  times_to_host(all.mail_time, mail_time_, narrow_);
  DB_ASSERT(static_cast<int64_t>(mail_time_.size()) == offset, "{} mail times for {} mails",
            mail_time_.size(), offset);
  order_mails(mail_time_, state);
  w.mail_count = offset;
  w.mail_node = mail_node_.data();
  w.mail_order = order_.data();
  w.mail_rows = all.mail_rows;
  w.mail_time = all.mail_time;
  return state.apply(w, model::WriteFilter{}, arena);
}

// Per node: the claims no rank still holds a mail of are skipped, then the held mails are
// claimed in merged order: each rank's in claim order, the ranks' by time, on equal times the
// higher rank's first (so the lower rank's is the newer).
void WindowMerger::order_mails(const std::vector<double>& times, model::NodeState& state) {
  order_.clear();
  mail_node_.resize(times.size());
  for (size_t g = 0; g < runs_.size();) {
    size_t end = g;
    int64_t claims = 0, sent = 0;
    for (; end < runs_.size() && runs_[end].node == runs_[g].node; ++end) {
      claims += runs_[end].claims, sent += runs_[end].sent;
      for (int32_t j = 0; j < runs_[end].sent; ++j)
        mail_node_[static_cast<size_t>(runs_[end].offset + j)] = runs_[end].node;
    }
    state.skip_mail_slots(runs_[g].node, claims - sent);
    cursor_.assign(end - g, 0);
    for (int64_t taken = 0; taken < sent; ++taken) {
      size_t pick = end;
      double pick_time = 0;
      for (size_t k = g; k < end; ++k) {  // higher ranks later: >= takes them first on ties
        if (cursor_[k - g] == runs_[k].sent) continue;
        const double t = times[static_cast<size_t>(runs_[k].offset + cursor_[k - g])];
        if (pick == end || t <= pick_time) pick = k, pick_time = t;
      }
      order_.push_back(runs_[pick].offset + cursor_[pick - g]++);
    }
    g = end;
  }
}

}  // namespace depbloom::train
