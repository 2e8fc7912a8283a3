// WriteGather: the collectives of a node-state exchange, written once for every strategy that
// exchanges written rows (strict after every step, depbloom at window ends): one all-gather
// of every rank's size header, then six all-gather-v in rank order (memory node ids, rows,
// times; mail ids, rows, times). The strategies differ only in their header, in their mail
// ids (strict: one node per mail; depbloom: a (node, claims, sent) triple per mailed node)
// and in how they apply what was gathered; that stays with them.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"
#include "depbloom/dist/communicator.h"

namespace depbloom::train {

// What one rank sends: memory rows (a node id, a row and a time each), mail ids (i32) and
// mails (a row and a time each).
struct SendSizes {
  int64_t mem_rows = 0, mail_ids = 0, mails = 0;
};

// A strategy's reading of one rank's size header.
using SizesOf = SendSizes (*)(const double* header);

// The node state's shape as the exchange sees it.
struct StateLayout {
  DType dtype = DType::f32;
  int64_t d_mem = 0, d_mail = 0;
  int mail_slots = 1;
};

// Rows sent by one rank or gathered from all: host ids; rows ([n, d_mem], [n, d_mail]) and
// times ([n]) on the state's device.
struct ExchangedRows {
  const int32_t* mem_node = nullptr;
  const int32_t* mail_id = nullptr;
  Tensor mem_rows, mem_time, mail_rows, mail_time;
};

class WriteGather {
 public:
  // Every rank's header (`own`, `fields` doubles on this rank, as many on every rank) gathered
  // in rank order, each read by `sizes_of` into the sizes gather_rows then gathers.
  void gather_sizes(dist::Communicator& comm, const double* own, int64_t fields, SizesOf sizes_of);
  // The six all-gather-v of `mine`, sized as this rank's header said; the gathered rows and
  // times come from `arena`, the ids stay here until the next gather.
  const ExchangedRows& gather_rows(dist::Communicator& comm, const ExchangedRows& mine,
                                   const StateLayout& layout, Arena& arena);
  // Rows of `sizes` whose values are never read, from `scratch`: what the forecast sends to a
  // CountingCommunicator, which reads only shapes.
  static ExchangedRows placeholder(const SendSizes& sizes, const StateLayout& layout,
                                   Arena& scratch);

  // From the last gather_sizes: each rank's header (fields() doubles each), sizes and the sums.
  const double* header(int rank) const { return headers_.data() + fields_ * rank; }
  int64_t fields() const { return fields_; }
  const std::vector<int64_t>& mem_counts() const { return mem_counts_; }
  const std::vector<int64_t>& mail_counts() const { return mail_counts_; }
  const SendSizes& totals() const { return totals_; }
  // The bytes gather_rows gathers, ids included (StrategyCounts::exchange_bytes).
  int64_t bytes(const StateLayout& layout) const;

 private:
  const std::vector<int64_t>& scaled(const std::vector<int64_t>& counts, int64_t by);

  std::vector<double> mine_, headers_;
  int64_t fields_ = 0;
  std::vector<int64_t> mem_counts_, id_counts_, mail_counts_, scaled_;
  SendSizes totals_;
  std::vector<int32_t> mem_node_, mail_id_;
  ExchangedRows all_;
};

}  // namespace depbloom::train
