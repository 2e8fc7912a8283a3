// ParameterStore: every learnable tensor of a model in one flat buffer each for values,
// gradients and the two Adam moments, with named views from a size table. Parameters are
// laid out sorted by name (as Marian does), so every rank agrees on the layout whatever
// the order the layers declared them in; one all-reduce and one fused Adam cover the model.
// A layer may place a parameter right after another (place_after), so that both read as one
// stacked matrix (one GEMM for attention's keys and values); initial values and checkpoints
// follow the name-sorted (canonical) layout, so a placement changes neither.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model {

enum class InitScheme {
  zeros,
  ones,
  uniform_fan_in,    // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), torch.nn.Linear's default
  time_frequencies,  // 1 / 10^linspace(0, 9, numel), TGN's time-encoding frequencies
  xavier_uniform,    // U(-b, b), b = sqrt(6 / (fan_in + fan_out)): torch's MultiheadAttention
  xavier_normal,     // N(0, 2 / (fan_in + fan_out)): the TGN authors' MergeLayer
};

// Handle returned by declare(); stays valid across finalize() (which reorders the layout).
struct ParamId {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
};

struct ParameterEntry {
  std::string name;
  Shape shape;
  InitScheme init = InitScheme::zeros;
  int64_t fan_in = 0;   // for uniform_fan_in and the xavier schemes
  int64_t fan_out = 0;  // for the xavier schemes
  int64_t offset = 0;   // element offset in the flat buffers, set by finalize()
  // Its offset in the name-sorted layout: the key of its initial values and its place in a
  // checkpoint's blobs. Equals offset unless a placement moved it or a parameter before it.
  int64_t canonical_offset = 0;
  int32_t after = -1;  // the declaration index it is placed right after (place_after), or -1
};

class ParameterStore {
 public:
  // dtype: f32 for training, f64 for gradient checks (CPU only).
  explicit ParameterStore(DType dtype = DType::f32, Device device = Device::cpu());

  // Adds a parameter to the size table; names must be unique. Only before finalize().
  ParamId declare(const std::string& name, Shape shape, InitScheme init, int64_t fan_in = 0,
                  int64_t fan_out = 0);
  // Stores `id` directly after `anchor` (which must not itself be placed): stacked() then
  // views both as one tensor. Only before finalize().
  void place_after(ParamId id, ParamId anchor);
  // Sorts the table by name, applies the placements, assigns offsets and allocates the four
  // flat buffers (values uninitialised until initialize(), gradients and moments zero).
  void finalize();
  // Draws every value on the host with Philox (purpose init) keyed by the seed and the
  // element's canonical offset, then copies: identical on every backend and placement.
  void initialize(uint64_t seed);

  bool finalized() const { return finalized_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t numel() const { return total_; }
  // Entries in layout order (after finalize(): sorted by name, then the placements).
  const std::vector<ParameterEntry>& entries() const { return entries_; }
  // A flat blob [numel] between layout order and canonical (name-sorted) order, both on the
  // host: how checkpoints store the blobs.
  void to_canonical(const Tensor& canonical, const Tensor& laid_out) const;
  void from_canonical(const Tensor& laid_out, const Tensor& canonical) const;
  const ParameterEntry& entry(ParamId id) const;
  ParamId find(const std::string& name) const;  // invalid id if absent

  // Views of one parameter (shape as declared) into each flat buffer. After finalize().
  Tensor value(ParamId id) const { return view_of(values_, id); }
  Tensor grad(ParamId id) const { return view_of(grads_, id); }
  Tensor adam_m(ParamId id) const { return view_of(adam_m_, id); }
  Tensor adam_v(ParamId id) const { return view_of(adam_v_, id); }
  // The value's (or with grad, the gradient's) view; an undefined Tensor for an invalid id
  // (a parameter a layer's configuration leaves out).
  Tensor view(ParamId id, bool grad) const {
    if (!id.valid()) return Tensor{};
    return grad ? this->grad(id) : value(id);
  }
  // `first` and the parameter placed after it (same trailing dims) as one tensor whose
  // leading dim is the sum of theirs, in the value or gradient buffer.
  Tensor stacked(ParamId first, ParamId second, bool grad) const;
  Tensor value(const std::string& name) const { return value(checked_find(name)); }
  Tensor grad(const std::string& name) const { return grad(checked_find(name)); }

  // The flat blobs [numel] (for the all-reduce and checkpoints).
  const Tensor& values() const { return values_.view(); }
  const Tensor& grads() const { return grads_.view(); }
  const Tensor& moments_m() const { return adam_m_.view(); }
  const Tensor& moments_v() const { return adam_v_.view(); }

  void zero_grad();
  // One fused Adam step over the whole model; the step counter starts at 1.
  void adam_step(const ops::AdamConfig& cfg);
  int64_t adam_steps() const { return adam_steps_; }
  void set_adam_steps(int64_t steps) { adam_steps_ = steps; }  // restoring a checkpoint

 private:
  Tensor view_of(const OwnedTensor& blob, ParamId id) const;
  void reorder(const Tensor& dst, const Tensor& src, bool into_canonical) const;
  ParamId checked_find(const std::string& name) const;

  DType dtype_;
  Device device_;
  bool finalized_ = false;
  std::vector<ParameterEntry> entries_;
  std::vector<int32_t> slot_of_id_;  // declaration index -> position in entries_
  int64_t total_ = 0;
  int64_t adam_steps_ = 0;
  OwnedTensor values_, grads_, adam_m_, adam_v_;
};

}  // namespace depbloom::model
