// Intra-batch refinement's bookkeeping (DESIGN.md 7.2, issue 17), on the host, from a step's
// events alone: how the step is cut into micro-batches, and for every memory row a
// micro-batch reads whose node had events in earlier micro-batches of the same step, which
// events those were and which was the latest. It builds no messages and reads no node state:
// the trainer turns the listed events into messages (as the write-back builds mails),
// aggregates them by the listed terms and runs model::MemoryRefiner on the listed rows.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::train {

// How the earlier in-batch messages of a row are combined (refine.aggregate).
enum class RefineAggregate { last, mean };

// bounds [k + 1] = the micro-batches of a step of `count` events in time order: micro-batch
// j holds the events at positions [bounds[j], bounds[j+1]). k = min(m, count) so none is
// empty (k = 1 for an empty step: bounds {0, 0}); the sizes differ by at most one, the first
// count % k micro-batches taking the extra event (10 events, m = 4: 3, 3, 2, 2). Reuses
// `bounds`' storage.
void cut_micro_batches(int64_t count, int32_t m, std::vector<int64_t>& bounds);

// For each refined row r (in request order): the request it answers and the node's earlier
// in-batch events, positions in the step (0-based, into the step's event list) ascending:
// event_pos[begin[r], begin[r] + count[r]), with role_of 0 where the node was the event's
// source and 1 its destination (a self loop counts once, as the destination: its later mail
// is the one the write-back keeps). In TGL's root-mail order (PlannedWrites) the mail node
// n got from the event at position p is mail 2p + role.
struct RefinePlan {
  std::vector<int64_t> request;     // [rows] index into the requests
  std::vector<int64_t> begin;       // [rows] into event_pos / event_role
  std::vector<int32_t> count;       // [rows] >= 1 earlier events
  std::vector<int64_t> latest;      // [rows] position of the latest earlier event
  std::vector<double> latest_time;  // [rows] its timestamp (stream time)
  // Each touched node's events in the step (positions ascending), rows point into them.
  std::vector<int64_t> event_pos;
  std::vector<int8_t> event_role;
  // The aggregation as weighted terms: message term_msg times term_weight summed into
  // refined row term_row. `last`: one term per row (the latest event, weight 1); `mean`: one
  // per earlier event, weight 1 / count.
  std::vector<int32_t> term_row;
  std::vector<int32_t> term_msg;
  std::vector<double> term_weight;
  // The distinct messages, in the order of their first term: the mail node n got from the
  // event at position msg_pos in role msg_role. Rows of one node in one micro-batch share
  // their latest earlier event, so many terms name one message.
  std::vector<int64_t> msg_pos;
  std::vector<int8_t> msg_role;
  // Filled by the BatchPlanner (plan rows): copy c corrects memory row row[c] for one
  // micro-batch that reads it, one copy per (row, micro-batch).
  std::vector<int32_t> row;  // [R] memory row
  std::vector<double> dt;    // [R] read time - the latest earlier event's time (>= 0)
  // The distinct values of dt, ascending, and each copy's index among them.
  std::vector<double> dts;     // [Dt]
  std::vector<int32_t> dt_of;  // [R] in [0, Dt)
  // With PlanConfig::refine_bases (else empty): the distinct rows among `row` in the order of
  // their first copy, and each copy's (rows read by several micro-batches have several
  // copies; the updater start reads each base row's memory through W_hh once).
  std::vector<int32_t> base;     // [B'] memory row
  std::vector<int32_t> base_of;  // [R] in [0, B')
  // With PlanConfig::refine_mail_dt (else empty): the age the updater reads copy c's message
  // with as of the latest earlier event, its time minus the previous earlier event's, or its
  // time where first[c] is 1 (the caller subtracts the node's last update).
  std::vector<double> mail_dt;  // [R]
  std::vector<double> first;    // [R] 1 or 0

  int64_t rows() const { return static_cast<int64_t>(request.size()); }
  int64_t terms() const { return static_cast<int64_t>(term_row.size()); }
  int64_t messages() const { return static_cast<int64_t>(msg_pos.size()); }
};

// The coherence loss's rows: the sampled copies, most earlier events first, and their
// earlier mails in rounds. Round i holds entries [round[i], round[i+1]): the i-th earlier
// mail of each of the first (round[i+1] - round[i]) copies, with the dt the updater reads it
// with (mail_dt_at_event: in round 0 the event's time, the caller subtracts the node's last
// update).
struct CoherencePlan {
  std::vector<int32_t> copy;   // [S] copy in [0, R)
  std::vector<int64_t> round;  // [rounds + 1] entry offsets
  std::vector<int64_t> mail;   // [entries] mail in writes (2 p + role)
  std::vector<double> dt;      // [entries]
};

class RefinePlanner {
 public:
  // Keeps a reference to the stream (src, dst, ts); sizes its node scratch once.
  explicit RefinePlanner(const data::EventStream& stream);

  // out = the refinement of a step: events[0, count) (stream rows, ascending) cut by `bounds`
  // (cut_micro_batches), and `requests` reads (req_node[i], req_micro[i]): micro-batch
  // req_micro[i] reads node req_node[i]'s memory row, whatever the reason (root, negative or
  // sampled neighbour). A request whose node had no event in an earlier micro-batch gets no
  // row; events of the request's own or later micro-batches are never listed. A (node,
  // micro-batch) pair may be requested more than once (one row each). O(count + requests +
  // micro-batches); allocation-free once the vectors have reached their sizes.
  void plan(RefinePlan& out, const int64_t* events, int64_t count,
            const std::vector<int64_t>& bounds, const int32_t* req_node, const int32_t* req_micro,
            int64_t requests, RefineAggregate aggregate);

 private:
  // The node's slot among the step's touched nodes, or -1 when it has no event in the step.
  int32_t slot_of(int32_t node) const;
  void touch(int32_t node);
  int32_t src_at(const int64_t* events, int64_t p) const {
    return stream_.src[static_cast<size_t>(events[p])];
  }
  int32_t dst_at(const int64_t* events, int64_t p) const {
    return stream_.dst[static_cast<size_t>(events[p])];
  }
  // plan()'s passes, in order.
  void list_events(RefinePlan& out, const int64_t* events, int64_t count);
  void bucket_requests(const int32_t* req_node, const int32_t* req_micro, int64_t requests,
                       int64_t micro);
  void count_earlier(const int64_t* events, const std::vector<int64_t>& bounds,
                     const int32_t* req_node, int64_t requests);
  void list_rows(RefinePlan& out, const int64_t* events, const int32_t* req_node, int64_t requests,
                 RefineAggregate aggregate);

  const data::EventStream& stream_;
  std::vector<uint32_t> node_stamp_;  // [N] == stamp_ when node_slot_ is current
  std::vector<int32_t> node_slot_;    // [N]
  uint32_t stamp_ = 0;
  int32_t touched_ = 0;
  std::vector<int64_t> slot_begin_;   // [touched + 1] into event_pos
  std::vector<int32_t> slot_fill_;    // per slot: events counted, then placed, then seen
  std::vector<int64_t> micro_start_;  // counting sort of the requests by micro-batch
  std::vector<int64_t> by_micro_;
  std::vector<int32_t> earlier_;    // [requests] earlier events of each request's node
  std::vector<int32_t> entry_msg_;  // [event_pos entries] its message, -1 before its first term
};

}  // namespace depbloom::train
