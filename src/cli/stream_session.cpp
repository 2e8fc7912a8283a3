// StreamSession: the checkpoint's trainer over the loaded events before the test split, input
// lines parsed into stream rows and queries, and each batch applied in one or two forward
// passes (stream_session.h).
#include "depbloom/cli/stream_session.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "depbloom/cli/train_command.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"

namespace depbloom::cli {
namespace {

int64_t parse_id(const std::string& text, int64_t line, const char* what) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    DB_THROW(data, "line {}: {} '{}' is not an integer node id", line, what, text);
  return v;
}

double parse_number(const std::string& text, int64_t line, const char* what) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    DB_THROW(data, "line {}: {} '{}' is not a finite number", line, what, text);
  return v;
}

template <class T>
void trim_to(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) > n) v.resize(static_cast<size_t>(n));
}

void keep_before(std::vector<int64_t>& events, int64_t end) {
  events.erase(std::lower_bound(events.begin(), events.end(), end), events.end());
}

}  // namespace

namespace {
constexpr double kFirstEdge = 1e-6, kGrowth = 1.01;
}  // namespace

void LatencyHistogram::add(double seconds) {
  int b = 0;
  if (seconds > kFirstEdge)
    b = static_cast<int>(std::min<double>(
        kBuckets - 1, std::ceil(std::log(seconds / kFirstEdge) / std::log(kGrowth))));
  ++buckets_[static_cast<size_t>(b)];
  ++count_;
}

double LatencyHistogram::quantile(double q) const {
  if (count_ == 0) return 0.0;
  const auto rank =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * static_cast<double>(count_))));
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[static_cast<size_t>(b)];
    if (seen >= rank) return kFirstEdge * std::pow(kGrowth, b);
  }
  return kFirstEdge * std::pow(kGrowth, kBuckets - 1);
}

std::vector<std::string> split_csv_line(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string field =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t a = field.find_first_not_of(" \t\r");
    const size_t b = field.find_last_not_of(" \t\r");
    out.push_back(a == std::string::npos ? std::string() : field.substr(a, b - a + 1));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

StreamSession::StreamSession(const std::string& checkpoint, const std::string& data,
                             const std::vector<std::string>& sets)
    : cfg_(depbloom_options()), ckpt_(read_checkpoint(checkpoint)) {
  cfg_.load_yaml_string(ckpt_.config_text, checkpoint + " (its saved config)");
  // The queries bring their own negatives: the split's are never drawn, TGB's file not read.
  cfg_.set_value("eval.negative_strategy", std::string("random"));
  cfg_.set_value("data.tgb_negatives", std::string());
  if (!data.empty()) cfg_.set_value("data.path", data);
  cfg_.apply_sets(sets);
  const RunConfig& c = cfg_.config();
  if (c.data.path.empty())
    DB_THROW(usage, "{}: its config names no data.path: pass --data", checkpoint);
  train::TrainerConfig tc = trainer_config(c, Device::cpu());
  if (train::refine_mode(tc).on)
    DB_THROW(usage, "{}: refine.micro_batches > 1: depbloom-stream runs without refinement",
             checkpoint);
  stream_ = data::load_events(c.data.path, c.load);
  data::keep_first_events(stream_, c.data.max_events);
  split_ = data::make_split(stream_, c.split);
  // The checkpoint's state has seen training and validation: the session starts after them.
  base_events_ = split_.test.empty() ? stream_.num_events() : split_.test.front();
  grown_ = base_events_;
  data::keep_first_events(stream_, base_events_);
  for (auto* v :
       {&split_.train, &split_.val, &split_.test, &split_.new_node_val, &split_.new_node_test})
    keep_before(*v, base_events_);
  loaded_nodes_ = next_new_ = stream_.num_nodes;
  for (int32_t v = 0; v < loaded_nodes_; ++v) {
    const int64_t original =
        stream_.original_id.empty() ? v : stream_.original_id[static_cast<size_t>(v)];
    (stream_.bipartite && v >= stream_.num_users ? items_ : users_)[original] = v;
  }
  const int64_t spare = c.stream.new_node_capacity;
  if (spare > INT32_MAX - int64_t{loaded_nodes_})
    DB_THROW(config, "stream.new_node_capacity = {} is too large", spare);
  stream_.num_nodes += static_cast<int32_t>(spare);
  tc.spare_nodes = spare;
  tc.spare_events = c.stream.event_capacity;
  trainer_ = std::make_unique<train::Trainer>(stream_, split_, tc);
  trainer_->load(ckpt_);
  restore_new_nodes();
  clock_ = stream_.ts.back();
}

StreamSession::~StreamSession() = default;

// The dense ids of an original (source, destination) pair, ids new to the session given spare
// rows; a data error, nothing assigned, when the spare rows run out.
void StreamSession::resolve(int64_t s, int64_t d, int64_t line, int32_t& src, int32_t& dst) {
  const auto find = [&](int64_t original, bool item) {
    const auto& ids = stream_.bipartite && item ? items_ : users_;
    const auto it = ids.find(original);
    return it == ids.end() ? -1 : it->second;
  };
  src = find(s, false);
  dst = find(d, true);
  const bool same = src < 0 && dst < 0 && !stream_.bipartite && s == d;
  const int64_t wanted = (src < 0 ? 1 : 0) + (dst < 0 ? 1 : 0) - (same ? 1 : 0);
  if (next_new_ + wanted > stream_.num_nodes)
    DB_THROW(data,
             "line {}: a node id new to the stream, and the stream.new_node_capacity of {} "
             "new nodes is used up",
             line, cfg_.config().stream.new_node_capacity);
  if (src < 0) src = assign(s, false);
  if (dst < 0) dst = same ? src : assign(d, true);
}

int32_t StreamSession::assign(int64_t original, bool item) {
  const int32_t v = next_new_++;
  (stream_.bipartite && item ? items_ : users_)[original] = v;
  ++stats_.new_nodes;
  return v;
}

void StreamSession::check_time(double t, int64_t line) {
  if (t < clock_)
    DB_THROW(data,
             "line {}: time {} is older than the latest time read, {} (lines must come in "
             "time order; docs/streaming.md)",
             line, t, clock_);
}

void StreamSession::add_line(const std::string& text, int64_t line,
                             StreamClock::time_point read_at) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos || text[first] == '#') return;
  try {
    const std::vector<std::string> fields = split_csv_line(text);
    if (fields[0] == "?")
      add_query(fields, line, read_at);
    else
      add_event(fields, line, read_at);
  } catch (const Error&) {
    ++stats_.rejected;
    throw;
  }
  if (static_cast<int64_t>(pending_.size()) >= cfg_.config().stream.batch_size) flush();
}

void StreamSession::add_query(const std::vector<std::string>& fields, int64_t line,
                              StreamClock::time_point read_at) {
  if (fields.size() != 4)
    DB_THROW(data, "line {}: a query is '?,src,dst,time' (4 fields), got {}", line, fields.size());
  const int64_t s = parse_id(fields[1], line, "source");
  const int64_t d = parse_id(fields[2], line, "destination");
  const double t = parse_number(fields[3], line, "time");
  check_time(t, line);
  int32_t src = 0, dst = 0;
  resolve(s, d, line, src, dst);
  if (!has_pending()) first_pending_at_ = read_at;
  queries_.push_back({src, dst, t, line, read_at});
  clock_ = t;
}

void StreamSession::add_event(const std::vector<std::string>& fields, int64_t line,
                              StreamClock::time_point read_at) {
  const int64_t d = stream_.edge_dim;
  const auto n = static_cast<int64_t>(fields.size());
  if (n != 3 + d && n != 4 + d)
    DB_THROW(data,
             "line {}: an event is 'src,dst,time[,label]' and {} edge features ({} or {} "
             "fields), got {}",
             line, d, 3 + d, 4 + d, n);
  const int64_t s = parse_id(fields[0], line, "source");
  const int64_t t_dst = parse_id(fields[1], line, "destination");
  const double t = parse_number(fields[2], line, "time");
  const int64_t label =
      n == 4 + d ? static_cast<int64_t>(parse_number(fields[3], line, "label")) : 0;
  std::vector<float> feat(static_cast<size_t>(d));
  for (int64_t j = 0; j < d; ++j)
    feat[static_cast<size_t>(j)] =
        static_cast<float>(parse_number(fields[static_cast<size_t>(n - d + j)], line, "feature"));
  check_time(t, line);
  if (stream_.num_events() - base_events_ >= cfg_.config().stream.event_capacity)
    DB_THROW(data, "line {}: the stream.event_capacity of {} events is used up", line,
             cfg_.config().stream.event_capacity);
  int32_t src = 0, dst = 0;
  resolve(s, t_dst, line, src, dst);
  if (!has_pending()) first_pending_at_ = read_at;
  const int64_t row = stream_.num_events();
  stream_.src.push_back(src);
  stream_.dst.push_back(dst);
  stream_.ts.push_back(t);
  stream_.event_id.push_back(line - 1);
  stream_.edge_feat.insert(stream_.edge_feat.end(), feat.begin(), feat.end());
  if (!stream_.label.empty()) stream_.label.push_back(static_cast<int32_t>(label));
  if (!stream_.split.empty()) stream_.split.push_back(2);
  clock_ = t;
  // Its group: the queries since the last event, all from its source at its time, one of
  // them its own pair (the positive).
  const auto end = static_cast<int64_t>(queries_.size());
  bool grouped = end > loose_from_, positive = false;
  for (int64_t i = loose_from_; i < end && grouped; ++i) {
    const Query& q = queries_[static_cast<size_t>(i)];
    grouped = q.src == src && q.time == t;
    positive = positive || q.dst == dst;
  }
  pending_.push_back({row, loose_from_, end, grouped && positive});
  loose_from_ = end;
}

// Whether the pending batch is one forward pass: every event with a group of k + 1 queries
// and no query outside the groups.
bool StreamSession::one_pass(int32_t& k) const {
  if (pending_.empty() || loose_from_ != static_cast<int64_t>(queries_.size())) return false;
  const int64_t size = pending_.front().group_end - pending_.front().group_begin;
  for (const Pending& p : pending_)
    if (!p.grouped || p.group_end - p.group_begin != size) return false;
  k = static_cast<int32_t>(size - 1);
  return true;
}

void StreamSession::flush() {
  if (!has_pending()) return;
  if (stream_.num_events() > grown_) {  // a batch of queries alone adds nothing
    grown_ = stream_.num_events();
    trainer_->grow_stream(grown_);
  }
  std::vector<int64_t>& rows = rows_;
  rows.clear();
  for (const Pending& p : pending_) rows.push_back(p.row);
  int32_t k = 0;
  if (!queries_.empty() && one_pass(k)) {
    std::vector<int32_t>& negatives = negatives_;
    std::vector<int64_t>& positive = positive_;
    negatives.clear();
    positive.assign(pending_.size(), 0);
    for (size_t b = 0; b < pending_.size(); ++b) {
      const Pending& p = pending_[b];
      const int32_t dst = stream_.dst[static_cast<size_t>(p.row)];
      positive[b] = p.group_begin;
      while (queries_[static_cast<size_t>(positive[b])].dst != dst) ++positive[b];
      for (int64_t i = p.group_begin; i < p.group_end; ++i)
        if (i != positive[b]) negatives.push_back(queries_[static_cast<size_t>(i)].dst);
    }
    const std::vector<float>& scores = trainer_->stream_batch(rows, negatives, k, true);
    std::vector<float>& logits = logits_;
    logits.assign(queries_.size(), 0.0F);
    const auto count = static_cast<int64_t>(rows.size());
    for (int64_t b = 0; b < count; ++b) {
      const Pending& p = pending_[static_cast<size_t>(b)];
      logits[static_cast<size_t>(positive[static_cast<size_t>(b)])] =
          scores[static_cast<size_t>(b)];
      int64_t j = 0;
      for (int64_t i = p.group_begin; i < p.group_end; ++i)
        if (i != positive[static_cast<size_t>(b)])
          logits[static_cast<size_t>(i)] = scores[static_cast<size_t>(count + j++ * count + b)];
    }
    emit(logits);
    ++stats_.one_pass_batches;
  } else {
    if (!queries_.empty()) emit(score_queries());
    if (!rows.empty()) trainer_->stream_batch(rows, {}, 0, true);
  }
  stats_.events += static_cast<int64_t>(rows.size());
  ++stats_.batches;
  pending_.clear();
  queries_.clear();
  loose_from_ = 0;
}

// The queries as rows after the stream's events (so never among the neighbours), scored in
// one pass without writes, then taken off the stream again.
const std::vector<float>& StreamSession::score_queries() {
  const int64_t n = stream_.num_events();
  std::vector<int64_t>& rows = query_rows_;  // not rows_: flush's events are applied after
  rows.clear();
  for (const Query& q : queries_) {
    rows.push_back(stream_.num_events());
    stream_.src.push_back(q.src);
    stream_.dst.push_back(q.dst);
    stream_.ts.push_back(q.time);
    stream_.event_id.push_back(q.line - 1);
  }
  std::vector<float>& logits = logits_;
  try {
    const std::vector<float>& scores = trainer_->stream_batch(rows, {}, 0, false);
    logits.assign(scores.begin(), scores.begin() + static_cast<int64_t>(rows.size()));
  } catch (...) {
    trim_to(stream_.src, n), trim_to(stream_.dst, n), trim_to(stream_.ts, n);
    trim_to(stream_.event_id, n);
    throw;
  }
  trim_to(stream_.src, n), trim_to(stream_.dst, n), trim_to(stream_.ts, n);
  trim_to(stream_.event_id, n);
  return logits;
}

void StreamSession::emit(const std::vector<float>& logits) {
  const StreamClock::time_point now = StreamClock::now();
  for (size_t i = 0; i < queries_.size(); ++i) {
    const Query& q = queries_[i];
    stats_.latency.add(std::chrono::duration<double>(now - q.read_at).count());
    ++stats_.queries;
    if (sink_) sink_({q.line, logits[i]});
  }
}

namespace {
// The original ids of the new-node rows, in row order (and whether each is an item), so that
// a session from the written checkpoint finds them in the same rows.
constexpr const char* kNewNodeIds = "stream/new_node_ids";
constexpr const char* kNewNodeIsItem = "stream/new_node_is_item";
}  // namespace

void StreamSession::save_checkpoint(const std::string& path) const {
  Checkpoint out = trainer_->save(ckpt_.epoch, ckpt_.config_text);
  const auto m = static_cast<size_t>(next_new_ - loaded_nodes_);
  std::vector<int64_t> ids(m);
  std::vector<uint8_t> is_item(m);
  for (const auto* map : {&users_, &items_})
    for (const auto& [original, v] : *map)
      if (v >= loaded_nodes_) {
        ids[static_cast<size_t>(v - loaded_nodes_)] = original;
        is_item[static_cast<size_t>(v - loaded_nodes_)] = map == &items_;
      }
  out.add(kNewNodeIds, DType::i64, {static_cast<int64_t>(m)}, ids.data(), m * sizeof(int64_t));
  out.add(kNewNodeIsItem, DType::u8, {static_cast<int64_t>(m)}, is_item.data(), m);
  write_checkpoint(path, out);
}

// A checkpoint a session wrote: its new nodes keep their rows (the state holds them).
void StreamSession::restore_new_nodes() {
  const CheckpointBlob* found = ckpt_.find(kNewNodeIds);
  if (found == nullptr) return;
  const int64_t m = found->numel();
  const CheckpointBlob& ids = ckpt_.get(kNewNodeIds, DType::i64, {m});
  const CheckpointBlob& is_item = ckpt_.get(kNewNodeIsItem, DType::u8, {m});
  if (m > stream_.num_nodes - loaded_nodes_)
    DB_THROW(data, "{}: {} new nodes, more than stream.new_node_capacity = {}", ckpt_.source, m,
             stream_.num_nodes - loaded_nodes_);
  for (int64_t i = 0; i < m; ++i) {
    int64_t original = 0;
    std::memcpy(&original, ids.bytes.data() + i * 8, sizeof(original));
    const bool item = stream_.bipartite && is_item.bytes[static_cast<size_t>(i)] != 0;
    if (!(item ? items_ : users_).emplace(original, next_new_).second)
      DB_THROW(data, "{}: new node {} is a node of the loaded stream ({})", ckpt_.source, original,
               stream_.source);
    ++next_new_;
  }
}

}  // namespace depbloom::cli
