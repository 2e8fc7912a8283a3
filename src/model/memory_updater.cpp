// GRU and RNN memory updaters: time encoding, input concat, the two input GEMMs and the
// fused cell from the op set; backward adds the W_hh path to the cell's direct dh.
#include "depbloom/model/memory_updater.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"
#include "model/attention_common.h"

namespace depbloom::model {

using ops::Trans;

RecurrentMemoryUpdater::RecurrentMemoryUpdater(ParameterStore& store, const std::string& name,
                                               RecurrentCell cell, int64_t mail_dim,
                                               int64_t time_dim, int64_t memory_dim)
    : store_(&store),
      cell_(cell),
      mail_dim_(mail_dim),
      hidden_(memory_dim),
      time_(store, name + ".time", time_dim) {
  DB_ASSERT(mail_dim > 0 && memory_dim > 0,
            "updater '{}' needs positive sizes (mail {}, memory {})", name, mail_dim, memory_dim);
  const int64_t g = gate_rows();
  weight_ih_ = store.declare(name + ".weight_ih", Shape(g, mail_dim + time_dim),
                             InitScheme::uniform_fan_in, memory_dim);
  bias_ih_ = store.declare(name + ".bias_ih", Shape(g), InitScheme::uniform_fan_in, memory_dim);
  weight_hh_ = store.declare(name + ".weight_hh", Shape(g, memory_dim), InitScheme::uniform_fan_in,
                             memory_dim);
  bias_hh_ = store.declare(name + ".bias_hh", Shape(g), InitScheme::uniform_fan_in, memory_dim);
}

void RecurrentMemoryUpdater::forward(const Tensor& h_new, MemoryUpdaterContext& ctx,
                                     const Tensor& mail, const Tensor& mail_dt,
                                     const Tensor& memory, Arena& arena) const {
  const int64_t batch = mail.dim(0);
  const DType dtype = memory.dtype();
  DB_ASSERT(mail.rank() == 2 && mail.dim(1) == mail_dim_ && memory.rank() == 2 &&
                memory.dim(0) == batch && memory.dim(1) == hidden_,
            "memory updater: mail {} and memory {} do not match [B, {}] and [B, {}]", mail.str(),
            memory.str(), mail_dim_, hidden_);
  // in [B, d_mail + d_time] = [mail || time encoding of the mail's age]
  ctx.input = arena.alloc(dtype, Shape(batch, mail_dim_ + time_.dim()));
  time_.forward_beside(ctx.input, ctx.time, mail, mail_dt);
  Tensor gx = arena.alloc(dtype, Shape(batch, gate_rows()));
  ops::gemm_bias(gx, ctx.input, Trans::N, store_->value(weight_ih_), Trans::T,
                 store_->value(bias_ih_));
  Tensor gh = arena.alloc(dtype, Shape(batch, gate_rows()));
  ops::gemm_bias(gh, memory, Trans::N, store_->value(weight_hh_), Trans::T,
                 store_->value(bias_hh_));
  cell_forward(h_new, ctx, gx, gh, memory, arena);
}

void RecurrentMemoryUpdater::forward_copies(const Tensor& h_new, MemoryUpdaterContext& ctx,
                                            const CopyMessages& msgs, const CopyTimes& mail_dt,
                                            const Tensor& memory, const CopyMessages& bases,
                                            Arena& arena) const {
  const int64_t batch = memory.dim(0);
  const DType dtype = memory.dtype();
  DB_ASSERT(memory.rank() == 2 && memory.dim(1) == hidden_ && msgs.copies == batch &&
                msgs.distinct.rank() == 2 && msgs.distinct.dim(1) == mail_dim_ &&
                bases.copies == batch && bases.distinct.rank() == 2 &&
                bases.distinct.dim(1) == hidden_ && mail_dt.copies() == batch,
            "memory updater: {} copies' messages {}, memory {}, base rows {} and {} ages do not "
            "match [D, {}], [B, {}], [B', {}] and B",
            msgs.copies, msgs.distinct.str(), memory.str(), bases.distinct.str(), mail_dt.copies(),
            mail_dim_, hidden_, hidden_);
  ctx.times = encode_times(time_, ctx.time, mail_dt, arena);
  ctx.msgs = msgs, ctx.bases = bases;
  ctx.w_ih = detail::column_blocks(store_->value(weight_ih_),
                                   std::array<int64_t, 2>{mail_dim_, time_.dim()});
  Tensor gx = arena.alloc(dtype, Shape(batch, gate_rows()));
  // The biases go to the distinct rows: b_ih with the ages, b_hh with the base rows.
  project_messages(gx, ctx.w_ih[0], msgs, /*accumulate=*/false, arena);  // the rest adds to it
  project_messages(gx, ctx.w_ih[1], ctx.times, /*accumulate=*/true, arena, store_->value(bias_ih_));
  Tensor gh = arena.alloc(dtype, Shape(batch, gate_rows()));
  project_messages(gh, store_->value(weight_hh_), bases, /*accumulate=*/false, arena,
                   store_->value(bias_hh_));
  cell_forward(h_new, ctx, gx, gh, memory, arena);
}

void RecurrentMemoryUpdater::cell_forward(const Tensor& h_new, MemoryUpdaterContext& ctx,
                                          const Tensor& gx, const Tensor& gh, const Tensor& memory,
                                          Arena& arena) const {
  ctx.gx = gx, ctx.gh = gh;
  if (cell_ == RecurrentCell::gru) {
    ctx.gates = arena.alloc(memory.dtype(), Shape(memory.dim(0), 4 * hidden_));
    ops::gru_cell_forward(h_new, ctx.gates, gx, gh, memory);
  } else {
    ops::rnn_cell_forward(h_new, gx, gh);
  }
  ctx.memory = memory;
  ctx.h_new = h_new;
}

std::array<Tensor, 2> RecurrentMemoryUpdater::cell_backward(const Tensor& dh_direct,
                                                            const Tensor& dh_new,
                                                            const MemoryUpdaterContext& ctx,
                                                            Arena& arena) const {
  const int64_t batch = dh_new.dim(0);
  const DType dtype = dh_new.dtype();
  const Tensor d_gx = ctx.gx;  // over the forward's gx and gh: the cell no longer needs them
  Tensor d_gh;
  if (cell_ == RecurrentCell::gru) {
    d_gh = ctx.gh;
    const Tensor direct = wanted(dh_direct) ? dh_direct : arena.alloc(dtype, Shape(batch, hidden_));
    ops::gru_cell_backward(d_gx, d_gh, direct, dh_new, ctx.gates, ctx.memory);
  } else {
    ops::rnn_cell_backward(d_gx, dh_new, ctx.h_new);
    d_gh = d_gx;  // gx and gh enter the RNN cell as one sum
  }
  return {d_gx, d_gh};
}

void RecurrentMemoryUpdater::backward(const Tensor& d_mail, const Tensor& d_memory,
                                      const Tensor& dh_new, const MemoryUpdaterContext& ctx,
                                      Arena& arena) const {
  const auto [d_gx, d_gh] = cell_backward(d_memory, dh_new, ctx, arena);
  ops::affine_grad(store_->grad(weight_hh_), store_->grad(bias_hh_), d_gh, ctx.memory);
  if (wanted(d_memory)) {  // the GRU's direct path is in d_memory already
    const double keep_direct = cell_ == RecurrentCell::gru ? 1.0 : 0.0;
    ops::gemm(d_memory, d_gh, Trans::N, store_->value(weight_hh_), Trans::N, 1.0, keep_direct);
  }
  ops::affine_grad(store_->grad(weight_ih_), store_->grad(bias_ih_), d_gx, ctx.input);
  // d_in [B, d_mail + d_time] = d_gx W_ih, for the parts that need it: the mail is stored
  // state and usually wants none; the encoding of its age feeds the time encoder.
  Tensor d_encoded = arena.alloc(dh_new.dtype(), Shape(dh_new.dim(0), time_.dim()));
  const std::array<detail::InputPart, 2> parts = {
      detail::InputPart{wanted(d_mail) ? d_mail : Tensor{}, mail_dim_},
      detail::InputPart{d_encoded, time_.dim()}};
  detail::affine_backward_parts(parts, d_gx, store_->value(weight_ih_));
  time_.backward(d_encoded, ctx.time);
}

void RecurrentMemoryUpdater::backward_copies(const Tensor& d_distinct, const Tensor& d_memory,
                                             const Tensor& d_bases, const Tensor& dh_new,
                                             const MemoryUpdaterContext& ctx, Arena& arena) const {
  DB_ASSERT(ctx.msgs.distinct.defined() && ctx.bases.distinct.defined() && ctx.w_ih[0].defined(),
            "memory updater: backward_copies after a forward that was not forward_copies");
  const auto [d_gx, d_gh] = cell_backward(d_memory, dh_new, ctx, arena);
  if (cell_ == RecurrentCell::rnn && wanted(d_memory)) ops::fill(d_memory, 0.0);  // no direct path
  project_messages_backward(d_bases, store_->grad(weight_hh_), d_gh, store_->value(weight_hh_),
                            ctx.bases, arena, store_->grad(bias_hh_));
  const Tensor dw = store_->grad(weight_ih_);
  const std::array<Tensor, 2> dw_parts =
      detail::column_blocks(dw, std::array<int64_t, 2>{mail_dim_, time_.dim()});
  Tensor d_encoded = arena.alloc(dh_new.dtype(), ctx.times.distinct.shape());
  ops::fill(d_encoded, 0.0);
  project_messages_backward(d_encoded, dw_parts[1], d_gx, ctx.w_ih[1], ctx.times, arena,
                            store_->grad(bias_ih_));
  project_messages_backward(d_distinct, dw_parts[0], d_gx, ctx.w_ih[0], ctx.msgs, arena);
  time_.backward(d_encoded, ctx.time);
}

}  // namespace depbloom::model
