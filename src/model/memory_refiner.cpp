// The refiner from existing ops only (time encoding, concat/split, gemm, bias, sigmoid, relu,
// mul, axpy), so the CUDA backend runs it through the same op interface as the CPU.
#include "depbloom/model/memory_refiner.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"
#include "model/attention_common.h"

namespace depbloom::model {

using ops::Act;

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
                            const Tensor& m, const Tensor& dt, Arena& arena) const {
  const char* layer = "memory refiner";
  DB_ASSERT(s.defined() && s.rank() == 2, "{}: s is {}, expected [R, {}]", layer, s.str(),
            memory_dim_);
  const int64_t rows = s.dim(0);
  detail::expect_shape(layer, "s", s, Shape(rows, memory_dim_));
  detail::expect_float_like(layer, "m", m, s, Shape(rows, message_dim_));
  detail::expect_float_like(layer, "dt", dt, s, Shape(rows));
  detail::expect_float_like(layer, "out", out, s, Shape(rows, memory_dim_));
  ctx = MemoryRefinerContext{};
  if (rows == 0) return;
  const DType dtype = s.dtype();

  // x [R, in] = [s || m || enc(dt)]; the gate and fc1 read it, the Linear contexts keep it.
  Tensor encoded = arena.alloc(dtype, Shape(rows, time_.dim()));
  time_.forward(encoded, ctx.time, dt);
  Tensor x = arena.alloc(dtype, Shape(rows, input_dim()));
  ops::concat_cols(x, {s, m, encoded});

  ctx.g = arena.alloc(dtype, Shape(rows, memory_dim_));
  gate_.forward(ctx.g, ctx.gate, x);
  ops::act_forward(Act::sigmoid, ctx.g, ctx.g);
  ctx.h = arena.alloc(dtype, Shape(rows, hidden_));
  fc1_.forward(ctx.h, ctx.fc1, x);
  ops::act_forward(Act::relu, ctx.h, ctx.h);
  ctx.f = arena.alloc(dtype, Shape(rows, memory_dim_));
  fc2_.forward(ctx.f, ctx.fc2, ctx.h);

  // out = s + g * f; the product goes to scratch first so that out may alias s.
  Tensor gated = arena.alloc(dtype, Shape(rows, memory_dim_));
  ops::mul(gated, ctx.g, ctx.f);
  if (out.raw() != s.raw()) ops::copy(out, s);
  ops::axpy(out, 1.0, gated);
}

void MemoryRefiner::backward(const Tensor& d_s, const Tensor& d_m, const Tensor& d_out,
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

  // dx [R, in] = d_gate Wg + d_h W1: the gate's backward writes it, fc1's GEMM adds to it.
  Tensor dx = arena.alloc(dtype, Shape(rows, input_dim()));
  gate_.backward(dx, d_gate, ctx.gate);
  fc1_.backward(Tensor{}, d_h, ctx.fc1);
  ops::gemm(dx, d_h, ops::Trans::N, store_->value(fc1_.weight()), ops::Trans::N, 1.0, 1.0);

  // Split dx into its three parts; d_s adds the residual's direct path.
  Tensor ds_part = wanted(d_s) ? d_s : arena.alloc(dtype, Shape(rows, memory_dim_));
  Tensor dm_part = wanted(d_m) ? d_m : arena.alloc(dtype, Shape(rows, message_dim_));
  Tensor d_encoded = arena.alloc(dtype, Shape(rows, time_.dim()));
  ops::split_cols({ds_part, dm_part, d_encoded}, dx);
  if (wanted(d_s)) ops::axpy(d_s, 1.0, d_out);
  time_.backward(d_encoded, ctx.time);
}

}  // namespace depbloom::model
