// What the work of a step costs in calls: op calls by kind, counted where the op interface
// dispatches (so the CPU and CUDA builds count the same calls, and on a GPU every op call is
// a kernel launch, but gemm_bias's and affine_grad's two: a bias kernel and the GEMM, and
// scatter_sum_rows's: a clear and the scatter), and
// uploads (host arrays sent to a step's device). Not a timer and not the GEMM FLOPs (runtime.h);
// host waits stay backend::host_waits().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace depbloom::backend {

// Every op of op_set.inc, in its order: the counters' index and the names reports print.
// clang-format off
#define DEPBLOOM_OP_KINDS(X)                                                                     \
  X(gemm) X(gemm_batched) X(gemm_bias) X(affine_grad) X(bias_add) X(bias_grad)                   \
  X(act_forward) X(act_backward) X(add_blocks_relu_forward) X(add_blocks_relu_backward)          \
  X(gru_cell_forward) X(gru_cell_backward) X(rnn_cell_forward) X(rnn_cell_backward)              \
  X(time_encode_forward) X(concat_cols_time_encode) X(time_encode_backward)                      \
  X(masked_softmax_forward) X(masked_softmax_backward)                                           \
  X(attention_forward) X(attention_backward) X(layer_norm_forward) X(layer_norm_backward)        \
  X(dropout_forward) X(dropout_backward)                                                         \
  X(gather_rows) X(scatter_add_rows) X(scatter_sum_rows) X(scatter_rows) X(copy_rows)            \
  X(concat_cols) X(gather_cols) X(split_cols)                                                    \
  X(bce_with_logits_forward) X(bce_with_logits_backward) X(bce_with_logits_loss_and_grad)        \
  X(adam_step)                                                                                   \
  X(fill) X(copy) X(axpy) X(scale) X(mul) X(sub) X(scale_rows) X(sum) X(sum_squares)
// clang-format on

#define DEPBLOOM_OP_KIND_ENUM(name) name,
enum class OpKind : uint8_t { DEPBLOOM_OP_KINDS(DEPBLOOM_OP_KIND_ENUM) };
#undef DEPBLOOM_OP_KIND_ENUM

#define DEPBLOOM_OP_KIND_NAME(name) #name,
inline constexpr const char* kOpKindNames[] = {DEPBLOOM_OP_KINDS(DEPBLOOM_OP_KIND_NAME)};
#undef DEPBLOOM_OP_KIND_NAME
inline constexpr size_t kOpKinds = std::size(kOpKindNames);

const char* op_kind_name(OpKind kind);

// Whose calls: the step's own thread (and any other), or a thread doing side work that
// overlaps the step (the CPU pipeline's deferred writes, which a serial step and a GPU step
// do inline instead). Counted apart, so the step's count is the same with and without it.
enum class OpLane : uint8_t { step, side };
inline constexpr size_t kOpLanes = 2;

// Counts the calling thread's calls in `lane` from now on (threads start in OpLane::step).
void set_thread_op_lane(OpLane lane);

// Counts so far of one lane, all its threads. A difference of two snapshots is what ran
// between them.
struct OpCounts {
  std::array<int64_t, kOpKinds> calls{};
  int64_t uploads = 0;

  int64_t total_calls() const;
  // The kernel launches the calls make on CUDA: one each, two for gemm_bias, affine_grad and
  // scatter_sum_rows.
  int64_t cuda_launches() const;
  int64_t operator[](OpKind kind) const { return calls[static_cast<size_t>(kind)]; }
  OpCounts operator-(const OpCounts& earlier) const;
};

OpCounts op_counts(OpLane lane = OpLane::step);

// Called by the dispatch layer (src/backend) once per op call, and by upload() once per
// array, on the CPU (a view) as on a GPU (a copy); both count in the calling thread's lane.
void count_op(OpKind kind);
void count_upload();

// While one is alive, ops check their arguments and are counted but do not run: a dry run
// that counts a step's calls exactly without its arithmetic (--plan). Results are garbage, so
// nothing may read them for anything but their shape; process-wide, not nestable.
class OpCountOnly {
 public:
  OpCountOnly();
  ~OpCountOnly();
  OpCountOnly(const OpCountOnly&) = delete;
  OpCountOnly& operator=(const OpCountOnly&) = delete;
};

// True inside an OpCountOnly: the dispatch layer then skips the op's work.
bool ops_count_only();

}  // namespace depbloom::backend
