// depbloom-embed's node selection: original node ids (as the input file writes them) to the
// stream's dense ids, one id per line of a --nodes file. Bipartite streams number users and
// items apart, so there a line may say which: "user:ID" or "item:ID" (a bare ID must name
// exactly one node).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::cli {

// The dense id of `text` (one line, surrounding blanks ignored), or -1 when no node has that
// original id; a usage-free parse failure or an ambiguous bare id throws a data error whose
// message starts with `where` ("nodes.txt:3").
int32_t find_node(const data::EventStream& stream, const std::string& text,
                  const std::string& where);

// Every non-blank line of `path`, in order (repeats kept); data error naming the file and
// line for an unreadable file, a malformed line or an id the stream does not hold.
std::vector<int32_t> read_node_list(const data::EventStream& stream, const std::string& path);

// The id a dense node had in the input file (the dense id itself for streams without a map).
int64_t original_id(const data::EventStream& stream, int32_t node);

}  // namespace depbloom::cli
