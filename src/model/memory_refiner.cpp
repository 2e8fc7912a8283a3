// The refiner from existing ops only (time encoding, split/concat, gather/scatter, gemm, bias,
// sigmoid, relu, mul, axpy), so the CUDA backend runs it through the same op interface as the
// CPU. The gate and fc1 read x = [s || m || enc(dt)] part by part through their weights'
// column blocks: x is never built, m's part is projected once per distinct message and
// enc(dt)'s once per distinct gap.
#include "depbloom/model/memory_refiner.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"
#include "model/attention_common.h"

namespace depbloom::model {
namespace {

using ops::Act;
using ops::Trans;
using Blocks = std::array<Tensor, 3>;

// y [R, N] = s W_s^T + (each copy's message) W_m^T + (each copy's enc(dt)) W_t^T + b, with
// w = (W_s, W_m, W_t).
void parts_forward(const Tensor& y, const Blocks& w, const Tensor& b, const Tensor& s,
                   const MemoryRefinerContext& ctx, Arena& arena) {
  project_messages(y, w[1], ctx.msgs, /*accumulate=*/false, arena);  // first: the rest adds
  ops::gemm(y, s, Trans::N, w[0], Trans::T, 1.0, 1.0);
  project_messages(y, w[2], ctx.times, /*accumulate=*/true, arena, b);  // b once per gap
}

// Its backward from dy [R, N]: dw [N, in] and db accumulate, and so do d_s (when wanted),
// d_encoded [Dt, time_dim] and d_distinct (when wanted).
void parts_backward(const Tensor& d_s, const Tensor& d_encoded, const Tensor& d_distinct,
                    const Tensor& dw, const Tensor& db, const Tensor& dy, const Blocks& w,
                    const MemoryRefinerContext& ctx, Arena& arena) {
  const std::array<int64_t, 3> widths = {w[0].dim(1), w[1].dim(1), w[2].dim(1)};
  const Blocks dw_parts = detail::column_blocks(dw, widths);  // windows: they accumulate into dw
  ops::gemm(dw_parts[0], dy, Trans::T, ctx.s, Trans::N, 1.0, 1.0);
  project_messages_backward(d_encoded, dw_parts[2], dy, w[2], ctx.times, arena, db);
  project_messages_backward(d_distinct, dw_parts[1], dy, w[1], ctx.msgs, arena);
  if (wanted(d_s)) ops::gemm(d_s, dy, Trans::N, w[0], Trans::N, 1.0, 1.0);
}

}  // namespace

MemoryRefiner::MemoryRefiner(ParameterStore& store, const std::string& name, int64_t memory_dim,
                             int64_t message_dim, int64_t time_dim, int64_t hidden)
    : store_(&store),
      memory_dim_(memory_dim),
      message_dim_(message_dim),
      hidden_(hidden),
      time_(store, name + ".time", time_dim),
      gate_(store, name + ".gate", memory_dim + message_dim + time_dim, memory_dim),
      fc1_(store, name + ".fc1", memory_dim + message_dim + time_dim, hidden),
      fc2_(store, name + ".fc2", hidden, memory_dim, true, InitScheme::zeros) {
  DB_ASSERT(memory_dim > 0 && message_dim > 0 && hidden > 0,
            "refiner '{}' needs positive sizes (memory {}, message {}, hidden {})", name,
            memory_dim, message_dim, hidden);
}

void MemoryRefiner::forward(const Tensor& out, MemoryRefinerContext& ctx, const Tensor& s,
                            const CopyMessages& msgs, const CopyTimes& dt, Arena& arena) const {
  const char* layer = "memory refiner";
  DB_ASSERT(s.defined() && s.rank() == 2, "{}: s is {}, expected [R, {}]", layer, s.str(),
            memory_dim_);
  const int64_t rows = s.dim(0);
  detail::expect_shape(layer, "s", s, Shape(rows, memory_dim_));
  DB_ASSERT(msgs.copies == rows && msgs.distinct.defined(),
            "{}: messages for {} copies with distinct {}, expected {} copies", layer, msgs.copies,
            msgs.distinct.str(), rows);
  detail::expect_float_like(layer, "distinct messages", msgs.distinct, s,
                            Shape(msgs.distinct.dim(0), message_dim_));
  DB_ASSERT(dt.copies() == rows && dt.distinct.defined(),
            "{}: gaps for {} copies with distinct {}, expected {} copies", layer, dt.copies(),
            dt.distinct.str(), rows);
  detail::expect_float_like(layer, "dt", dt.distinct, s, Shape(dt.distinct.numel()));
  detail::expect_float_like(layer, "out", out, s, Shape(rows, memory_dim_));
  ctx = MemoryRefinerContext{};
  if (rows == 0) return;
  const DType dtype = s.dtype();
  ctx.s = s, ctx.msgs = msgs;
  ctx.times = encode_times(time_, ctx.time, dt, arena);
  const std::array<int64_t, 3> widths = {memory_dim_, message_dim_, time_.dim()};
  ctx.gate_w = detail::column_blocks(store_->value(gate_.weight()), widths);
  ctx.fc1_w = detail::column_blocks(store_->value(fc1_.weight()), widths);

  ctx.g = arena.alloc(dtype, Shape(rows, memory_dim_));
  parts_forward(ctx.g, ctx.gate_w, store_->value(gate_.bias()), s, ctx, arena);
  ops::act_forward(Act::sigmoid, ctx.g, ctx.g);
  ctx.h = arena.alloc(dtype, Shape(rows, hidden_));
  parts_forward(ctx.h, ctx.fc1_w, store_->value(fc1_.bias()), s, ctx, arena);
  ops::act_forward(Act::relu, ctx.h, ctx.h);
  ctx.f = arena.alloc(dtype, Shape(rows, memory_dim_));
  fc2_.forward(ctx.f, ctx.fc2, ctx.h);

  // out = s + g * f; the product goes to scratch first when out aliases s.
  if (out.raw() == s.raw()) {
    Tensor gated = arena.alloc(dtype, Shape(rows, memory_dim_));
    ops::mul(gated, ctx.g, ctx.f);
    ops::axpy(out, 1.0, gated);
  } else {
    ops::mul(out, ctx.g, ctx.f);
    ops::axpy(out, 1.0, s);
  }
}

void MemoryRefiner::backward(const Tensor& d_s, const Tensor& d_distinct, const Tensor& d_out,
                             const MemoryRefinerContext& ctx, Arena& arena) const {
  const int64_t rows = d_out.dim(0);
  detail::expect_shape("memory refiner", "d_out", d_out, Shape(rows, memory_dim_));
  if (rows == 0) return;
  DB_ASSERT(ctx.g.defined() && ctx.g.dim(0) == rows,
            "memory refiner: backward of {} rows after a forward of {}", rows, ctx.g.str());
  const DType dtype = d_out.dtype();

  // Through out = s + g * f: d_f = d_out * g, d_g = d_out * f, then each activation.
  Tensor d_f = arena.alloc(dtype, Shape(rows, memory_dim_));
  ops::mul(d_f, d_out, ctx.g);
  Tensor d_gate = arena.alloc(dtype, Shape(rows, memory_dim_));
  ops::mul(d_gate, d_out, ctx.f);
  ops::act_backward(Act::sigmoid, d_gate, d_gate, ctx.g);
  Tensor d_h = arena.alloc(dtype, Shape(rows, hidden_));
  fc2_.backward(d_h, d_f, ctx.fc2);
  ops::act_backward(Act::relu, d_h, d_h, ctx.h);

  // d_s starts from the residual's direct path; both branches add their parts of dx.
  if (wanted(d_s)) ops::copy(d_s, d_out);
  Tensor d_encoded = arena.alloc(dtype, ctx.times.distinct.shape());
  ops::fill(d_encoded, 0.0);
  parts_backward(d_s, d_encoded, d_distinct, store_->grad(gate_.weight()),
                 store_->grad(gate_.bias()), d_gate, ctx.gate_w, ctx, arena);
  parts_backward(d_s, d_encoded, d_distinct, store_->grad(fc1_.weight()), store_->grad(fc1_.bias()),
                 d_h, ctx.fc1_w, ctx, arena);
  time_.backward(d_encoded, ctx.time);
}

}  // namespace depbloom::model
