// depbloom-stream's engine (docs/streaming.md): a checkpoint's model and node state, the
// loaded stream's events before its test split as the neighbour lists, and input lines
// (events and score queries, in time order) applied in batches of stream.batch_size. A
// batch's queries are answered when it is applied, from the state at its start (TGN's
// batch semantics: a query sees every earlier batch in memory and every event read before
// it in its neighbour lists). The queries read just before an event that share its source
// and time and include its own (src, dst) are that event's group: when every event of a
// batch has a group of the same size and no other query waits, the batch is one evaluation
// forward pass with those negatives, the computation --eval-only runs (the same bits);
// otherwise its queries are scored in a pass of their own over the same state first.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "depbloom/cli/options.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"
#include "depbloom/train/checkpoint.h"
#include "depbloom/train/trainer.h"

namespace depbloom::cli {

using StreamClock = std::chrono::steady_clock;

// One answered query: its input line and the link logit (probability 1 / (1 + e^-logit)).
struct StreamAnswer {
  int64_t line = 0;
  float logit = 0;
};

// Query latencies in a fixed log-scale histogram (buckets 1% wide from 1 us to about 6
// hours), so a long-running session's memory does not grow with its queries. A quantile is
// its bucket's upper edge: at most 1% above the value of that rank.
class LatencyHistogram {
 public:
  void add(double seconds);
  double quantile(double q) const;  // nearest rank, q in [0, 1]; 0 when empty
  int64_t count() const { return count_; }

 private:
  static constexpr int kBuckets = 2400;
  std::vector<int64_t> buckets_ = std::vector<int64_t>(kBuckets, 0);
  int64_t count_ = 0;
};

struct StreamStats {
  int64_t events = 0;    // applied
  int64_t queries = 0;   // answered
  int64_t rejected = 0;  // lines reported and skipped
  int64_t batches = 0;
  int64_t one_pass_batches = 0;  // batches whose queries were their events' groups
  int64_t new_nodes = 0;         // ids unseen in the loaded stream given a row
  LatencyHistogram latency;      // per answered query: from reading its line to its answer
};

class StreamSession {
 public:
  // Loads `checkpoint`, its config (with `sets` applied, "key=value"), its stream (`data`
  // replaces data.path when not empty) cut before the test split, and the trainer from the
  // checkpoint (the state --eval-only tests from). Usage/config/data errors as Error.
  StreamSession(const std::string& checkpoint, const std::string& data,
                const std::vector<std::string>& sets);
  ~StreamSession();

  // Every answer goes to `sink` when its batch is applied, in input order.
  void set_sink(std::function<void(const StreamAnswer&)> sink) { sink_ = std::move(sink); }

  // One input line, numbered from 1: an event "src,dst,time[,label],f1..fd" or a query
  // "?,src,dst,time"; blank lines and lines starting with '#' are skipped. A line it cannot
  // take throws a data error "line N: ..." and leaves nothing of it behind. Applies the batch
  // when this event fills it.
  void add_line(const std::string& text, int64_t line, StreamClock::time_point read_at);
  // Applies the pending part batch (events and queries), if any.
  void flush();
  bool has_pending() const { return !pending_.empty() || !queries_.empty(); }
  StreamClock::time_point first_pending_at() const { return first_pending_at_; }

  // The model and updated node state as a checkpoint (temp file + rename). Its node-state
  // blobs hold the loaded nodes and the new-node rows, and the new nodes' original ids: a
  // session from it gives them the same rows.
  void save_checkpoint(const std::string& path) const;

  const StreamStats& stats() const { return stats_; }
  const RunConfig& config() const { return cfg_.config(); }
  int64_t loaded_events() const { return base_events_; }

 private:
  struct Query {
    int32_t src, dst;
    double time;
    int64_t line;
    StreamClock::time_point read_at;
  };
  struct Pending {  // an event read, not yet applied (its row is in the stream)
    int64_t row;
    int64_t group_begin;  // its queries: queries_[group_begin, group_end)
    int64_t group_end;
    bool grouped;  // they are its positive then negatives
  };

  void resolve(int64_t s, int64_t d, int64_t line, int32_t& src, int32_t& dst);
  int32_t assign(int64_t original, bool item);
  void restore_new_nodes();
  void check_time(double t, int64_t line);
  void add_event(const std::vector<std::string>& fields, int64_t line,
                 StreamClock::time_point read_at);
  void add_query(const std::vector<std::string>& fields, int64_t line,
                 StreamClock::time_point read_at);
  bool one_pass(int32_t& k) const;
  const std::vector<float>& score_queries();
  void emit(const std::vector<float>& logits);

  OptionRegistry cfg_;
  Checkpoint ckpt_;
  data::EventStream stream_;
  data::ChronoSplit split_;
  std::unique_ptr<train::Trainer> trainer_;
  int64_t base_events_ = 0;   // the loaded events kept (before the test split)
  int64_t grown_ = 0;         // the events in the trainer's neighbour lists
  int32_t loaded_nodes_ = 0;  // dense ids of the loaded stream
  int32_t next_new_ = 0;      // the next spare row
  std::unordered_map<int64_t, int32_t> users_, items_;  // original -> dense (items_: bipartite)
  double clock_ = 0;                                    // the latest time read
  bool started_ = false;
  std::vector<Pending> pending_;
  std::vector<Query> queries_;
  int64_t loose_from_ = 0;  // queries_[loose_from_, end): not yet in an event's group
  StreamClock::time_point first_pending_at_{};
  std::function<void(const StreamAnswer&)> sink_;
  StreamStats stats_;
  // A batch's working lists, kept so that applying one allocates nothing once warm.
  std::vector<int64_t> rows_, query_rows_, positive_;
  std::vector<int32_t> negatives_;
  std::vector<float> logits_;
};

// "a,b,c" -> {"a", "b", "c"}, each trimmed of blanks (and a trailing CR).
std::vector<std::string> split_csv_line(const std::string& text);

}  // namespace depbloom::cli
