// Labels for dynamic node classification (docs/node_classification.md): the stream's own
// label column (JODIE's state_label), or a text file of (node, time, label) lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::data {

// One label per event of `stream`: -1 unlabelled, else 0 or 1.
// `path` empty: the stream's label column, every event labelled (nonzero is a positive); a
// stream without one is a data error that says how to give labels.
// `path` set: a text file of "node,time,label" lines (fields split by commas, or by blanks
// when the first data line has no comma; blank lines and '#' comments skipped; an optional
// header line). node is the source node's id and time the event's timestamp, both as the
// stream's own file writes them; label is 0 or 1. The label goes to every event whose source
// is `node` at exactly `time`; the other events stay unlabelled. A line that does not parse,
// a label other than 0 or 1, or a (node, time) with no such event is a data error naming the
// file and the line.
std::vector<int8_t> event_labels(const EventStream& stream, const std::string& path);

}  // namespace depbloom::data
