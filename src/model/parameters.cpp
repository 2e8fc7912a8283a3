// ParameterStore: the size table, the sorted flat layout, seeded host-side initialisation
// and the whole-model zero_grad / Adam step.
#include "depbloom/model/parameters.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "depbloom/core/philox.h"

namespace depbloom::model {

ParameterStore::ParameterStore(DType dtype, Device device) : dtype_(dtype), device_(device) {
  DB_ASSERT(is_floating(dtype), "parameters must be f32 or f64, got {}", dtype_name(dtype));
}

ParamId ParameterStore::declare(const std::string& name, Shape shape, InitScheme init,
                                int64_t fan_in, int64_t fan_out) {
  DB_ASSERT(!finalized_, "parameter '{}' declared after finalize()", name);
  DB_ASSERT(!name.empty(), "a parameter needs a name");
  DB_ASSERT(!find(name).valid(), "parameter '{}' declared twice", name);
  DB_ASSERT(shape.numel() > 0, "parameter '{}' has no elements: {}", name, shape.str());
  DB_ASSERT(init != InitScheme::uniform_fan_in || fan_in > 0,
            "parameter '{}' uses uniform_fan_in but fan_in is {}", name, fan_in);
  const bool xavier = init == InitScheme::xavier_uniform || init == InitScheme::xavier_normal;
  DB_ASSERT(!xavier || (fan_in > 0 && fan_out > 0),
            "parameter '{}' uses a xavier init but its fans are {} and {}", name, fan_in, fan_out);
  entries_.push_back(ParameterEntry{name, shape, init, fan_in, fan_out, 0});
  slot_of_id_.push_back(static_cast<int32_t>(entries_.size() - 1));
  return ParamId{static_cast<int32_t>(entries_.size() - 1)};
}

void ParameterStore::place_after(ParamId id, ParamId anchor) {
  DB_ASSERT(!finalized_, "place_after() after finalize()");
  DB_ASSERT(id.valid() && anchor.valid() && id.index != anchor.index &&
                static_cast<size_t>(std::max(id.index, anchor.index)) < entries_.size(),
            "place_after: ids {} and {} do not name two declared parameters", id.index,
            anchor.index);
  ParameterEntry& e = entries_[static_cast<size_t>(id.index)];
  const ParameterEntry& a = entries_[static_cast<size_t>(anchor.index)];
  DB_ASSERT(e.after < 0 && a.after < 0, "place_after: '{}' after '{}': placements do not chain",
            e.name, a.name);
  for (const ParameterEntry& other : entries_)
    DB_ASSERT(other.after != id.index, "place_after: '{}' already has '{}' placed after it", e.name,
              other.name);
  e.after = anchor.index;
}

void ParameterStore::finalize() {
  DB_ASSERT(!finalized_, "finalize() called twice");
  // Canonical order: by name. The ids handed out keep pointing at their entries.
  std::vector<int32_t> order(entries_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return entries_[a].name < entries_[b].name; });
  int64_t canonical = 0;
  for (const int32_t i : order) {
    entries_[static_cast<size_t>(i)].canonical_offset = canonical;
    canonical += entries_[static_cast<size_t>(i)].shape.numel();
  }
  // Layout order: canonical, with each placed parameter moved right after its anchor.
  std::vector<int32_t> layout;
  layout.reserve(order.size());
  for (const int32_t i : order) {
    if (entries_[static_cast<size_t>(i)].after >= 0) continue;
    layout.push_back(i);
    for (const int32_t j : order)
      if (entries_[static_cast<size_t>(j)].after == i) layout.push_back(j);
  }
  std::vector<ParameterEntry> sorted;
  sorted.reserve(entries_.size());
  for (size_t pos = 0; pos < layout.size(); ++pos) {
    sorted.push_back(entries_[static_cast<size_t>(layout[pos])]);
    slot_of_id_[static_cast<size_t>(layout[pos])] = static_cast<int32_t>(pos);
  }
  entries_ = std::move(sorted);
  total_ = 0;
  for (auto& e : entries_) {
    e.offset = total_;
    total_ += e.shape.numel();
  }
  values_ = OwnedTensor::zeros(dtype_, Shape(total_), device_);
  grads_ = OwnedTensor::zeros(dtype_, Shape(total_), device_);
  adam_m_ = OwnedTensor::zeros(dtype_, Shape(total_), device_);
  adam_v_ = OwnedTensor::zeros(dtype_, Shape(total_), device_);
  finalized_ = true;
}

void ParameterStore::initialize(uint64_t seed) {
  DB_ASSERT(finalized_, "initialize() before finalize()");
  const RngKey key{seed, static_cast<uint32_t>(RngPurpose::init), 0};
  std::vector<double> host(static_cast<size_t>(total_));
  for (const auto& e : entries_) {
    const int64_t n = e.shape.numel();
    double* out = host.data() + e.offset;
    const auto key_base = static_cast<uint64_t>(e.canonical_offset);
    switch (e.init) {
      case InitScheme::zeros:
        std::fill(out, out + n, 0.0);
        break;
      case InitScheme::ones:
        std::fill(out, out + n, 1.0);
        break;
      case InitScheme::uniform_fan_in: {
        const double bound = 1.0 / std::sqrt(static_cast<double>(e.fan_in));
        for (int64_t i = 0; i < n; ++i) {
          // Keyed by the canonical offset: distinct per parameter, independent of the backend
          // and of placements.
          const Philox4 r = philox_draw(key, key_base + static_cast<uint64_t>(i), 0);
          out[i] = (2.0 * uniform_double(r.v[0], r.v[1]) - 1.0) * bound;
        }
        break;
      }
      case InitScheme::xavier_uniform:
      case InitScheme::xavier_normal: {
        const double fans = static_cast<double>(e.fan_in + e.fan_out);
        const bool normal = e.init == InitScheme::xavier_normal;
        const double scale = normal ? std::sqrt(2.0 / fans) : std::sqrt(6.0 / fans);
        for (int64_t i = 0; i < n; ++i) {
          const Philox4 r = philox_draw(key, key_base + static_cast<uint64_t>(i), 0);
          const double u = uniform_double(r.v[0], r.v[1]);
          if (!normal) {
            out[i] = (2.0 * u - 1.0) * scale;
            continue;
          }
          // Box-Muller; 1 - u lies in (0, 1], so the logarithm is finite.
          const double v = uniform_double(r.v[2], r.v[3]);
          out[i] = std::sqrt(-2.0 * std::log(1.0 - u)) * std::cos(6.283185307179586 * v) * scale;
        }
        break;
      }
      case InitScheme::time_frequencies:
        for (int64_t i = 0; i < n; ++i) {
          const double exponent = n == 1 ? 0.0 : 9.0 * static_cast<double>(i) / (n - 1);
          out[i] = 1.0 / std::pow(10.0, exponent);
        }
        break;
    }
  }
  if (dtype_ == DType::f64) {
    ops::copy(values_.view(), Tensor::wrap(host.data(), Shape(total_)));
  } else {
    std::vector<float> narrow(host.begin(), host.end());
    ops::copy(values_.view(), Tensor::wrap(narrow.data(), Shape(total_)));
  }
}

const ParameterEntry& ParameterStore::entry(ParamId id) const {
  DB_ASSERT(id.index >= 0 && static_cast<size_t>(id.index) < slot_of_id_.size(),
            "parameter id {} out of range ({} declared)", id.index, slot_of_id_.size());
  return entries_[static_cast<size_t>(slot_of_id_[static_cast<size_t>(id.index)])];
}

ParamId ParameterStore::find(const std::string& name) const {
  for (size_t id = 0; id < slot_of_id_.size(); ++id)
    if (entries_[static_cast<size_t>(slot_of_id_[id])].name == name)
      return ParamId{static_cast<int32_t>(id)};
  return ParamId{};
}

ParamId ParameterStore::checked_find(const std::string& name) const {
  const ParamId id = find(name);
  DB_ASSERT(id.valid(), "no parameter named '{}'", name);
  return id;
}

Tensor ParameterStore::stacked(ParamId first, ParamId second, bool grad) const {
  DB_ASSERT(finalized_, "parameter views before finalize()");
  const ParameterEntry& a = entry(first);
  const ParameterEntry& b = entry(second);
  DB_ASSERT(b.after == first.index && b.offset == a.offset + a.shape.numel(),
            "parameter '{}' is not placed after '{}'", b.name, a.name);
  Shape shape = a.shape;
  shape.dims[0] += b.shape.dims[0];
  DB_ASSERT(b.shape.rank == a.shape.rank && shape.numel() == a.shape.numel() + b.shape.numel(),
            "parameters '{}' {} and '{}' {} do not stack", a.name, a.shape.str(), b.name,
            b.shape.str());
  const Tensor blob = grad ? grads_.view() : values_.view();
  return blob.rows(a.offset, a.offset + shape.numel()).reshape(shape);
}

// Per parameter, rows of one flat blob into another, between layout and canonical order.
void ParameterStore::reorder(const Tensor& dst, const Tensor& src, bool into_canonical) const {
  DB_ASSERT(finalized_, "a blob reordered before finalize()");
  for (const auto& e : entries_) {
    const int64_t n = e.shape.numel();
    const int64_t to = into_canonical ? e.canonical_offset : e.offset;
    const int64_t from = into_canonical ? e.offset : e.canonical_offset;
    ops::copy(dst.rows(to, to + n), src.rows(from, from + n));
  }
}

void ParameterStore::to_canonical(const Tensor& canonical, const Tensor& laid_out) const {
  reorder(canonical, laid_out, true);
}

void ParameterStore::from_canonical(const Tensor& laid_out, const Tensor& canonical) const {
  reorder(laid_out, canonical, false);
}

Tensor ParameterStore::view_of(const OwnedTensor& blob, ParamId id) const {
  DB_ASSERT(finalized_, "parameter views before finalize()");
  const ParameterEntry& e = entry(id);
  return blob.view().rows(e.offset, e.offset + e.shape.numel()).reshape(e.shape);
}

void ParameterStore::zero_grad() {
  DB_ASSERT(finalized_, "zero_grad() before finalize()");
  ops::fill(grads_.view(), 0.0);
}

void ParameterStore::adam_step(const ops::AdamConfig& cfg) {
  DB_ASSERT(finalized_, "adam_step() before finalize()");
  ++adam_steps_;
  ops::adam_step(values_.view(), grads_.view(), adam_m_.view(), adam_v_.view(), cfg, adam_steps_);
}

}  // namespace depbloom::model
