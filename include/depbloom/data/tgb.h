// TGB's fixed evaluation negatives (the Temporal Graph Benchmark's link-prediction sets),
// read from the .npy arrays tools/tgb_negatives.py writes from TGB's pickles, and attached
// to a loaded stream. Not a reader of TGB's pickles themselves (Python's format).
#pragma once

#include <string>

#include "depbloom/data/event_stream.h"

namespace depbloom::data {

// Reads `<dir>/<split>_{src,dst,ts,neg}.npy` for the splits val and test present (at least
// one): query q is the positive (src[q], dst[q], ts[q]) in TGB's node ids and its K
// negative destinations neg[q, :]. TGB's node ids are the stream's original ids; for a
// bipartite stream items are numbered after the users (item id + max user id + 1), as
// TGB's reindexing does. Each query's negatives become the row of every event with that
// (src, dst, ts); a query that matches no event, an id not in the stream, or splits with
// different K is a data error naming the file and row.
void attach_tgb_negatives(EventStream& stream, const std::string& dir, bool two_spaces);

}  // namespace depbloom::data
