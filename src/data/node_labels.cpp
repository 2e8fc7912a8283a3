// Node-classification labels: the stream's label column or a (node, time, label) file,
// parsed by the delimited-text parser every event format uses (delimited.h).
#include "depbloom/data/node_labels.h"

#include <cstring>
#include <unordered_map>

#include "delimited.h"
#include "depbloom/core/error.h"
#include "depbloom/data/mapped_file.h"

namespace depbloom::data {
namespace {

// An event's (original source id, timestamp bits): what a label line names.
struct SourceTime {
  int64_t node;
  uint64_t time_bits;
  bool operator==(const SourceTime& o) const { return node == o.node && time_bits == o.time_bits; }
};

struct SourceTimeHash {
  size_t operator()(const SourceTime& k) const {
    return std::hash<int64_t>()(k.node) ^ (std::hash<uint64_t>()(k.time_bits) * 0x9E3779B97F4A7C15ull);
  }
};

uint64_t bits_of(double t) {
  uint64_t b = 0;
  std::memcpy(&b, &t, sizeof b);
  return b;
}

// The file's columns: node, time, label. The parser wants a destination column too; it
// reads the node's field again.
detail::ColumnPlan label_columns(std::string_view text) {
  detail::ColumnPlan plan;
  plan.src = 0, plan.dst = 0, plan.time = 1, plan.label = 2;
  plan.fixed_fields = 3;
  plan.comment = '#';
  plan.format = "node labels";
  std::string_view first;
  int64_t line = 0;
  if (detail::first_content_line(text, plan.comment, first, line)) {
    plan.delimiter = first.find(',') == std::string_view::npos ? ' ' : ',';
    std::vector<std::string_view> fields;
    detail::split_fields(first, plan.delimiter, fields);
    plan.header = !fields.empty() && !detail::looks_numeric(fields[0]);
  }
  return plan;
}

}  // namespace

std::vector<int8_t> event_labels(const EventStream& stream, const std::string& path) {
  const auto events = static_cast<size_t>(stream.num_events());
  if (path.empty()) {
    if (stream.label.empty())
      DB_THROW(data,
               "{}: the stream has no label column (JODIE's state_label): node classification "
               "needs labels; give a (node, time, label) file with classify.labels "
               "(docs/node_classification.md)",
               stream.source);
    std::vector<int8_t> labels(events);
    for (size_t e = 0; e < events; ++e) labels[e] = stream.label[e] != 0 ? 1 : 0;
    return labels;
  }
  const MappedFile file(path);
  const detail::RawEvents raw = detail::parse_delimited(file.view(), path, label_columns(file.view()));
  std::unordered_multimap<SourceTime, size_t, SourceTimeHash> at;
  at.reserve(events);
  for (size_t e = 0; e < events; ++e) {
    const int32_t src = stream.src[e];
    const int64_t node = stream.original_id.empty() ? src : stream.original_id[static_cast<size_t>(src)];
    at.emplace(SourceTime{node, bits_of(stream.ts[e])}, e);
  }
  std::vector<int8_t> labels(events, -1);
  for (int64_t i = 0; i < raw.size(); ++i) {
    const auto r = static_cast<size_t>(i);
    if (raw.label[r] != 0 && raw.label[r] != 1)
      DB_THROW(data, "{}:{}: the label must be 0 or 1, found {}", path, raw.line[r], raw.label[r]);
    auto [first, last] = at.equal_range(SourceTime{raw.src[r], bits_of(raw.ts[r])});
    if (first == last)
      DB_THROW(data, "{}:{}: no event of the stream {} has source node {} at time {}", path,
               raw.line[r], stream.source, raw.src[r], raw.ts[r]);
    for (auto it = first; it != last; ++it) labels[it->second] = static_cast<int8_t>(raw.label[r]);
  }
  return labels;
}

}  // namespace depbloom::data
