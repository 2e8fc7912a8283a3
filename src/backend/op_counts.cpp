// The op counters: one relaxed atomic per lane and kind. Ops are called from the training
// thread and the pipeline's side thread (never from OpenMP workers, which run inside an op),
// a few hundred calls a step: an uncontended atomic add costs nanoseconds, and a snapshot
// needs no registry of per-thread counters. The thread's lane is a thread_local read.
#include "depbloom/backend/op_counts.h"

#include <atomic>

#include "depbloom/core/error.h"

namespace depbloom::backend {
namespace {

struct LaneCounters {
  std::array<std::atomic<int64_t>, kOpKinds> calls{};
  std::atomic<int64_t> uploads{0};
};

std::array<LaneCounters, kOpLanes> g_lanes;
thread_local OpLane t_lane = OpLane::step;
std::atomic<bool> g_count_only{false};

LaneCounters& own_lane() {
  return g_lanes[static_cast<size_t>(t_lane)];
}

}  // namespace

const char* op_kind_name(OpKind kind) {
  return kOpKindNames[static_cast<size_t>(kind)];
}

int64_t OpCounts::total_calls() const {
  int64_t n = 0;
  for (const int64_t c : calls) n += c;
  return n;
}

int64_t OpCounts::cuda_launches() const {
  return total_calls() + (*this)[OpKind::gemm_bias] + (*this)[OpKind::affine_grad] +
         (*this)[OpKind::scatter_sum_rows];
}

OpCounts OpCounts::operator-(const OpCounts& earlier) const {
  OpCounts d;
  for (size_t k = 0; k < kOpKinds; ++k) d.calls[k] = calls[k] - earlier.calls[k];
  d.uploads = uploads - earlier.uploads;
  return d;
}

void set_thread_op_lane(OpLane lane) {
  t_lane = lane;
}

OpCounts op_counts(OpLane lane) {
  const LaneCounters& from = g_lanes[static_cast<size_t>(lane)];
  OpCounts c;
  for (size_t k = 0; k < kOpKinds; ++k) c.calls[k] = from.calls[k].load(std::memory_order_relaxed);
  c.uploads = from.uploads.load(std::memory_order_relaxed);
  return c;
}

void count_op(OpKind kind) {
  own_lane().calls[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
}

void count_upload() {
  own_lane().uploads.fetch_add(1, std::memory_order_relaxed);
}

OpCountOnly::OpCountOnly() {
  DB_ASSERT(!g_count_only.exchange(true), "OpCountOnly: a dry run is already on");
}

OpCountOnly::~OpCountOnly() {
  g_count_only = false;
}

bool ops_count_only() {
  return g_count_only.load(std::memory_order_relaxed);
}

}  // namespace depbloom::backend
