// The depbloom strategy's window end (DESIGN.md 7.1), apart from its collectives.
// WindowJournal follows what one rank writes into its replica during a window: the nodes
// whose memory it wrote, each mailed node's claims, and the window-start rings it was the
// first to overwrite (saved, to be put back). At the window end it lays out the rank's
// contribution: the newest version of every row it wrote. WindowMerger applies every rank's
// contribution, gathered in rank order, by the merge rules:
//   memory and last update: the newest update time wins, ties to the lower rank;
//   mails: the window-start ring, then every rank's window mails that its ring still holds,
//   each rank's in the order it claimed them, the ranks' interleaved by time (on equal times
//   the lower rank's counts as the newer, as for memory); the ring keeps the newest slots.
// After it every replica holds the same rows.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"
#include "depbloom/model/node_state.h"

namespace depbloom::train {

// Every rank's window writes, concatenated in rank order (host ids; rows and times on the
// state's device). Each rank's mailed nodes come as (node, claims, sent) triples, its sent
// mails node by node in that order, each node's in claim order.
struct WindowWrites {
  std::vector<int64_t> mem_counts;        // [P] memory rows per rank
  const int32_t* mem_node = nullptr;      // [sum mem_counts]
  Tensor mem_rows, mem_time;              // [sum, d_mem], [sum]
  std::vector<int64_t> mail_nodes;        // [P] mailed nodes per rank
  const int32_t* mail_triples = nullptr;  // [3 x sum mail_nodes]
  Tensor mail_rows, mail_time;            // [sent, d_mail], [sent]

  int ranks() const { return static_cast<int>(mem_counts.size()); }
};

// One rank's contribution: a WindowWrites of one rank (views into the journal and arena).
struct WindowContribution {
  int64_t mem_count = 0, mail_nodes = 0, mails = 0;
  const int32_t* mem_node = nullptr;
  const int32_t* mail_triples = nullptr;
  Tensor mem_rows, mem_time, mail_rows, mail_time;
};

// The nodes one rank wrote in a window: each written memory row once, each mailed node with
// its claims. Its sizes are what the rank sends at the window end; the journal keeps one,
// and the forecast's rehearsal keeps one from the planned writes.
class WindowTally {
 public:
  explicit WindowTally(int64_t num_nodes);
  void wrote(int32_t node);
  // Counts a mail to `node`; true when it is the node's first of the window.
  bool claim(int32_t node);
  const std::vector<int32_t>& mem_nodes() const { return mem_node_; }
  const std::vector<int32_t>& mail_nodes() const { return mail_node_; }
  int32_t claims(int32_t node) const { return claims_[static_cast<size_t>(node)]; }
  // The window's mails a ring of `slots` still holds: min(claims, slots) per node.
  int64_t held_mails(int slots) const;
  void clear();

 private:
  std::vector<uint8_t> wrote_memory_;  // [N]
  std::vector<int32_t> claims_;        // [N] mails claimed in the window
  std::vector<int32_t> mem_node_, mail_node_;
};

class WindowJournal {
 public:
  explicit WindowJournal(const model::NodeState& state);

  // Before `writes` go into `state`: notes their nodes and claims, and saves the rings of
  // the nodes they are the first of this window to mail.
  void record(const model::WriteSet& writes, const model::NodeState& state, Arena& arena);
  // After the window's last apply: the rows this rank sends, read from its replica (rows and
  // times from `arena`).
  WindowContribution contribution(const model::NodeState& state, Arena& arena);
  // Puts back the window-start rings of the nodes this rank mailed (rows, times, head, count).
  void restore_rings(model::NodeState& state, Arena& arena);
  // A new window: nothing recorded.
  void clear();

 private:
  void save_rings(const model::NodeState& state, int64_t first, Arena& arena);

  int slots_;
  WindowTally tally_;
  std::vector<int32_t> start_head_, start_count_;  // per mailed node, at the window start
  OwnedTensor start_mail_, start_ts_;              // [capacity, slots, d_mail], [capacity, slots]
  std::vector<int32_t> triples_, flat_;            // contribution and restore scratch
};

class WindowMerger {
 public:
  // Applies `all` to `state`, whose rings of the mailed nodes must be at their window start
  // (WindowJournal::restore_rings). Returns the memory rows and mails written.
  int64_t apply(const WindowWrites& all, model::NodeState& state, Arena& arena);

 private:
  struct MailRun {  // one rank's sent mails of one node
    int32_t node, rank, claims, sent;
    int64_t offset;  // position of its first mail in all.mail_rows
  };
  void order_mails(const std::vector<double>& times, model::NodeState& state);

  std::vector<double> mem_time_, mail_time_;
  std::vector<float> narrow_;
  std::vector<int64_t> best_, mem_win_;
  std::vector<int32_t> win_node_;
  std::vector<int32_t> best_stamp_;
  int32_t stamp_ = 0;
  std::vector<MailRun> runs_;
  std::vector<int32_t> mail_node_;  // [sent] the node of each gathered mail
  std::vector<int64_t> order_, cursor_;
};

}  // namespace depbloom::train
