// Intra-batch memory refinement (DESIGN.md 7.2): a memory row read by a micro-batch whose
// node had events in earlier micro-batches of the same step gets a gated residual correction
//   x = [s || m || enc(dt)],  s' = s + sigmoid(x Wg^T + bg) * (relu(x W1^T + b1) W2^T + b2),
// with m the aggregated message of those earlier events and dt the time since the latest.
// Only the layer: which rows, which messages and which dt are the caller's (train/refine_plan.h).
// m and enc(dt) reach the gate and fc1 through their column blocks, once per distinct message
// (CopyMessages) and per distinct gap (CopyTimes). Parameter gradients accumulate; d_s overwrites,
// d_distinct accumulates; dt is data and gets no gradient.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "depbloom/core/arena.h"
#include "depbloom/model/copy_messages.h"
#include "depbloom/model/linear.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/time_encoder.h"

namespace depbloom::model {

struct MemoryRefinerContext {
  TimeEncoderContext time;
  LinearContext fc2;
  CopyMessages msgs;
  CopyMessages times;  // enc(dt) [Dt, time_dim], each distinct gap once
  Tensor s;            // [R, d_mem] (the caller keeps it alive)
  // The gate's and fc1's weights split by input part (s, m, enc(dt)).
  std::array<Tensor, 3> gate_w, fc1_w;
  Tensor g;  // [R, d_mem] the gate, after the sigmoid
  Tensor h;  // [R, hidden] relu(x W1^T + b1)
  Tensor f;  // [R, d_mem] the correction before gating
};

class MemoryRefiner {
 public:
  // Declares, under `name` (the trainer uses "refine"):
  //   "<name>.time.{w,b}" [time_dim]: the refiner's own TimeEncoder (the model's class, TGN's
  //     cos(dt w + b), but its own parameters: in-batch gaps are far shorter than mail ages,
  //     and sharing the updater's encoder would couple the two and change m = 1 runs);
  //   "<name>.gate.{weight,bias}" [memory_dim, in]: one gate per memory dimension;
  //   "<name>.fc1.{weight,bias}" [hidden, in] and "<name>.fc2.{weight,bias}" [memory_dim,
  //     hidden], fc2 zero-initialised so that a fresh refiner is the identity (s' = s) and
  //     training starts from the unrefined model;
  // with in = memory_dim + message_dim + time_dim.
  MemoryRefiner(ParameterStore& store, const std::string& name, int64_t memory_dim,
                int64_t message_dim, int64_t time_dim, int64_t hidden = 64);

  // out [R, d_mem] = s + g * f(x) from s [R, d_mem], the R copies' messages (distinct
  // [D, d_msg]) and gaps dt (distinct [Dt]; all of s's dtype and device). out may alias s;
  // s, msgs and dt must stay alive until backward. Scratch and the context's tensors come
  // from `arena`.
  void forward(const Tensor& out, MemoryRefinerContext& ctx, const Tensor& s,
               const CopyMessages& msgs, const CopyTimes& dt, Arena& arena) const;
  // d_s [R, d_mem] = d_out + (through x) overwrites; d_distinct [D, d_msg] accumulates; both
  // optional (Tensor{} to skip), neither may alias d_out. Parameter gradients accumulate.
  void backward(const Tensor& d_s, const Tensor& d_distinct, const Tensor& d_out,
                const MemoryRefinerContext& ctx, Arena& arena) const;

  int64_t memory_dim() const { return memory_dim_; }
  int64_t message_dim() const { return message_dim_; }
  int64_t time_dim() const { return time_.dim(); }
  int64_t hidden() const { return hidden_; }
  int64_t input_dim() const { return memory_dim_ + message_dim_ + time_.dim(); }

 private:
  const ParameterStore* store_;
  int64_t memory_dim_, message_dim_, hidden_;
  TimeEncoder time_;
  Linear gate_, fc1_, fc2_;
};

}  // namespace depbloom::model
