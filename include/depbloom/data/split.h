// Chronological train/val/test splits and the evaluation protocol's held-out nodes.
// Protocol tgn reproduces the TGN authors' get_data() (quantile split times, 10% new
// nodes removed from training, a new-node pass over val/test); tgl splits 70/15/15 by
// event count; file takes a split column from the file (TGL's ext_roll); tgb is TGB's split
// (tgn's quantile times, no held-out nodes). See docs/data.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/core/name_table.h"
#include "depbloom/data/event_stream.h"

namespace depbloom::data {

enum class SplitProtocol { tgn, tgl, file, tgb };

const NameTable<SplitProtocol>& split_protocol_names();  // "tgn" | "tgl" | "file" | "tgb"
const char* split_protocol_name(SplitProtocol protocol);

struct SplitSpec {
  SplitProtocol protocol = SplitProtocol::tgn;
  double val_quantile = 0.70;       // tgn, tgb: val starts after this timestamp quantile
  double test_quantile = 0.85;      // tgn, tgb: test starts after this one
  double new_node_fraction = 0.10;  // tgn: share of all nodes held out of training
  double val_fraction = 0.15;       // tgl: share of events (by count) in val
  double test_fraction = 0.15;      // tgl: share in test
  uint64_t seed = 0;                // draws the held-out nodes (Philox, RngPurpose::new_nodes)
};

// Event positions are indices into the (time-sorted) EventStream, ascending.
struct ChronoSplit {
  SplitProtocol protocol = SplitProtocol::tgn;
  double val_time = 0;   // tgn, tgb: val = val_time < ts <= test_time; test = ts > test_time
  double test_time = 0;  // tgl/file: the first timestamp of val and of test
  std::vector<int64_t> train;
  std::vector<int64_t> val;
  std::vector<int64_t> test;
  // tgn only (empty otherwise): the sampled held-out nodes (sorted dense ids) ...
  std::vector<int32_t> held_out_nodes;
  // ... every node absent from the training events (held-out ones and late arrivals) ...
  std::vector<uint8_t> is_new_node;  // [num_nodes]
  // ... and the val/test events touching such a node: the inductive ("new node") pass.
  std::vector<int64_t> new_node_val;
  std::vector<int64_t> new_node_test;
  int64_t removed_from_train = 0;  // events before val_time dropped for touching held-out nodes
};

ChronoSplit make_split(const EventStream& stream, const SplitSpec& spec);

// np.quantile(ts, q) with NumPy's default 'linear' method, bit for bit (ts sorted).
double timestamp_quantile(const std::vector<double>& sorted_ts, double q);

}  // namespace depbloom::data
