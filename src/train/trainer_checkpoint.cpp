// Trainer checkpoints: the flat parameter, gradient-free Adam state and node state blobs,
// copied through the host, plus a layout signature so that a checkpoint of another model
// is refused with a message instead of being loaded into the wrong rows.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/train/trainer.h"

namespace depbloom::train {
namespace {

std::vector<int64_t> dims_of(const Tensor& t) {
  return std::vector<int64_t>(t.shape().dims.begin(), t.shape().dims.begin() + t.rank());
}

void add_device(Checkpoint& c, const std::string& name, const Tensor& t) {
  OwnedTensor host(t.dtype(), t.shape());
  ops::copy(host, t);
  c.add(name, host.view());
}

void load_device(const Checkpoint& c, const std::string& name, const Tensor& t) {
  const CheckpointBlob& b = c.get(name, t.dtype(), dims_of(t));
  Tensor host(const_cast<uint8_t*>(b.bytes.data()), t.dtype(), t.shape());
  ops::copy(t, host);
}

// The checkpoint's rows of the node-state blob `name` (the state's row count, or `spare`
// fewer when spare > 0: depbloom-stream's rows for unseen nodes) into t's first rows; the
// rest keep the fresh state's values.
int64_t load_node_rows(const Checkpoint& c, const std::string& name, const Tensor& t,
                       int64_t spare) {
  const CheckpointBlob* b = c.find(name);
  const int64_t rows = t.dim(0);
  if (spare == 0 || b == nullptr || b->shape.empty() || b->shape[0] == rows) {
    load_device(c, name, t);
    return rows;
  }
  std::vector<int64_t> dims = dims_of(t);
  dims[0] = rows - spare;
  const CheckpointBlob& blob = c.get(name, t.dtype(), dims);
  const Tensor part = t.rows(0, dims[0]);
  ops::copy(part, Tensor(const_cast<uint8_t*>(blob.bytes.data()), t.dtype(), part.shape()));
  return dims[0];
}

// Parameter names and sizes in canonical (name-sorted) order, the order of the blobs: two
// models agree on it iff their blobs mean the same thing.
std::string layout_signature(const model::ParameterStore& store) {
  std::vector<const model::ParameterEntry*> order;
  for (const auto& e : store.entries()) order.push_back(&e);
  std::sort(order.begin(), order.end(),
            [](const auto* a, const auto* b) { return a->canonical_offset < b->canonical_offset; });
  std::string s;
  for (const auto* e : order) s += e->name + ":" + e->shape.str() + ";";
  return s;
}

// A flat parameter blob (values or an Adam moment) in canonical order, whatever the
// layout's placements, so checkpoints from before a placement still load.
void add_parameters(Checkpoint& c, const std::string& name, const model::ParameterStore& store,
                    const Tensor& t) {
  OwnedTensor host(t.dtype(), t.shape()), canonical(t.dtype(), t.shape());
  ops::copy(host, t);
  store.to_canonical(canonical, host);
  c.add(name, canonical.view());
}

void load_parameters(const Checkpoint& c, const std::string& name,
                     const model::ParameterStore& store, const Tensor& t) {
  const CheckpointBlob& b = c.get(name, t.dtype(), dims_of(t));
  OwnedTensor host(t.dtype(), t.shape());
  store.from_canonical(host, Tensor(const_cast<uint8_t*>(b.bytes.data()), t.dtype(), t.shape()));
  ops::copy(t, host);
}

}  // namespace

Checkpoint Trainer::save(int64_t epoch, const std::string& config_text) const {
  writer_->flush();  // the node state whole
  Checkpoint c;
  c.epoch = epoch;
  c.step = store_->adam_steps();
  c.rng_state = {cfg_.seed};
  c.config_text = config_text;
  const std::string sig = layout_signature(*store_);
  c.add("model.layout", DType::u8, {static_cast<int64_t>(sig.size())}, sig.data(), sig.size());
  add_parameters(c, "params", *store_, store_->values());
  add_parameters(c, "adam.m", *store_, store_->moments_m());
  add_parameters(c, "adam.v", *store_, store_->moments_v());
  add_device(c, "state.memory", state_->memory());
  add_device(c, "state.last_update", state_->last_update());
  add_device(c, "state.mail", state_->mail());
  add_device(c, "state.mail_ts", state_->mail_ts());
  const auto n = static_cast<int64_t>(state_->ring_heads().size());
  c.add("state.ring_head", DType::i32, {n}, state_->ring_heads().data(), sizeof(int32_t) * n);
  c.add("state.ring_count", DType::i32, {n}, state_->ring_counts().data(), sizeof(int32_t) * n);
  return c;
}

void Trainer::load(const Checkpoint& c) {
  writer_->flush();
  const std::string where = c.source.empty() ? std::string("checkpoint") : c.source;
  const std::string sig = layout_signature(*store_);
  const CheckpointBlob* layout = c.find("model.layout");
  if (layout == nullptr || std::string(layout->bytes.begin(), layout->bytes.end()) != sig)
    DB_THROW(data,
             "{}: the checkpoint holds another model (its parameter layout differs from "
             "this config's)",
             where);
  load_parameters(c, "params", *store_, store_->values());
  load_parameters(c, "adam.m", *store_, store_->moments_m());
  load_parameters(c, "adam.v", *store_, store_->moments_v());
  store_->set_adam_steps(c.step);
  const int64_t spare = cfg_.spare_nodes;
  if (spare > 0) state_->reset();  // rows past the checkpoint's start fresh
  const int64_t n = load_node_rows(c, "state.memory", state_->memory(), spare);
  load_node_rows(c, "state.last_update", state_->last_update(), spare);
  load_node_rows(c, "state.mail", state_->mail(), spare);
  load_node_rows(c, "state.mail_ts", state_->mail_ts(), spare);
  std::vector<int32_t> h = state_->ring_heads(), k = state_->ring_counts();
  const CheckpointBlob& heads = c.get("state.ring_head", DType::i32, {n});
  const CheckpointBlob& counts = c.get("state.ring_count", DType::i32, {n});
  std::memcpy(h.data(), heads.bytes.data(), heads.bytes.size());
  std::memcpy(k.data(), counts.bytes.data(), counts.bytes.size());
  for (int64_t i = 0; i < n; ++i)
    if (h[static_cast<size_t>(i)] < 0 || h[static_cast<size_t>(i)] >= state_->mail_slots() ||
        k[static_cast<size_t>(i)] < 0 || k[static_cast<size_t>(i)] > state_->mail_slots())
      DB_THROW(data, "{}: mailbox ring of node {} is out of range", where, i);
  state_->set_rings(h, k);
}

}  // namespace depbloom::train
