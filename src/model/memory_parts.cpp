// The built-in memory parts of a Tgnn: no memory (one zero column per row), TGN's GRU /
// JODIE's RNN updater over one mail, and APAN's attention over the mailbox; the memory-model
// table (memory_model.cpp) names their factories. Rows whose node holds no mail (the trainer
// stages them last) keep their memory.
#include <memory>

#include "depbloom/backend/ops.h"
#include "depbloom/model/apan_updater.h"
#include "depbloom/model/context.h"
#include "depbloom/model/memory_model.h"
#include "depbloom/model/memory_updater.h"
#include "model/tgnn_parts.h"

namespace depbloom::model {
namespace {

// Rows [0, n) of a batch run through the updater; the rest copy their gathered memory.
int64_t pass_through_rest(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows) {
  const int64_t u = updated.dim(0);
  const int64_t n = in.mem_with_mail < 0 ? u : in.mem_with_mail;
  if (n < u) ops::copy(updated.rows(n, u), rows.memory.rows(n, u));
  return n;
}

class NoMemory final : public MemoryPart {
 public:
  bool reads_state() const override { return false; }
  void forward(const Tensor& updated, const TgnnInputs&, const MemoryRows&, bool, Arena&) override {
    ops::fill(updated, 0.0);
  }
  void backward(const Tensor&, Arena&) override {}
};

class RecurrentMemory final : public MemoryPart, public UpdaterRefinement {
 public:
  RecurrentMemory(ParameterStore& store, const TgnnConfig& cfg, RecurrentCell cell)
      : cfg_(cfg),
        updater_(store, "memory_updater", cell, cfg.d_mail(), cfg.d_mem_time, cfg.d_mem) {}

  void forward(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows, bool,
               Arena& arena) override {
    n_ = pass_through_rest(updated, in, rows);
    if (n_ == 0) return;
    // TGL's GRU/RNN updaters encode the time since the memory's last update.
    Tensor mail_dt = arena.alloc(updated.dtype(), Shape(n_));
    if (cfg_.mail_dt_at_event) {  // the write-back stored the delta as the mail's time
      ops::copy(mail_dt, rows.mail_ts.rows(0, n_).reshape(Shape(n_)));
    } else {
      ops::sub(mail_dt, in.mem_time.rows(0, n_), rows.last_update.rows(0, n_));
    }
    updater_.forward(updated.rows(0, n_), ctx_,
                     rows.mail.rows(0, n_).reshape(Shape(n_, cfg_.d_mail())), mail_dt,
                     rows.memory.rows(0, n_), arena);
  }

  UpdaterRefinement* refinement() override { return this; }
  void backward(const Tensor& d_updated, Arena& arena) override {
    if (n_ == 0 || !d_updated.defined()) return;
    updater_.backward(Tensor{}, Tensor{}, d_updated.rows(0, n_), ctx_, arena);
  }

  void apply_detached(const Tensor& out, const Tensor& memory, const Tensor& mail, const Tensor& dt,
                      Arena& arena) const override {
    MemoryUpdaterContext scratch;
    updater_.forward(out, scratch, mail, dt, memory, arena);
  }

  void forward_start(const Tensor& out, const Tensor& memory, const CopyMessages& bases,
                     const CopyMessages& msgs, const CopyTimes& dt, Arena& arena) override {
    updater_.forward_copies(out, start_ctx_, msgs, dt, memory, bases, arena);
  }

  void backward_start(const Tensor& d_memory, const Tensor& d_bases, const Tensor& d_distinct,
                      const Tensor& d_out, Arena& arena) override {
    updater_.backward_copies(d_distinct, d_memory, d_bases, d_out, start_ctx_, arena);
  }

 private:
  TgnnConfig cfg_;
  RecurrentMemoryUpdater updater_;
  MemoryUpdaterContext ctx_, start_ctx_;
  int64_t n_ = 0;
};

ApanUpdaterConfig apan_config(const TgnnConfig& cfg) {
  ApanUpdaterConfig a;
  a.d_mem = cfg.d_mem;
  a.d_mail = cfg.d_mail();
  a.d_time = cfg.d_mem_time;
  a.heads = cfg.memory_heads;
  a.dropout = cfg.dropout;
  return a;
}

class AttentionMemory final : public MemoryPart, public UpdaterRefinement {
 public:
  AttentionMemory(ParameterStore& store, const TgnnConfig& cfg)
      : cfg_(cfg), updater_(store, "memory_updater", apan_config(cfg)) {}

  void forward(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows, bool training,
               Arena& arena) override {
    n_ = pass_through_rest(updated, in, rows);
    if (n_ == 0) return;
    const DropoutDraw drop = dropout_draw(in, 1, in.mem_id, 0, n_, training, cfg_.dropout);
    updater_.forward(updated.rows(0, n_), ctx_, rows.memory.rows(0, n_), rows.mail.rows(0, n_),
                     rows.mail_ts.rows(0, n_), in.mem_time.rows(0, n_), in.mem_mask.rows(0, n_),
                     drop, arena);
  }

  UpdaterRefinement* refinement() override { return this; }
  void backward(const Tensor& d_updated, Arena& arena) override {
    if (n_ == 0 || !d_updated.defined()) return;
    // The stored memory is detached state: its gradient is scratch.
    Tensor d_memory = arena.alloc(d_updated.dtype(), Shape(n_, cfg_.d_mem));
    updater_.backward(d_memory, Tensor{}, d_updated.rows(0, n_), ctx_, arena);
  }

  // A mailbox of the one mail, written at 0 and read at dt; no dropout (no gradient).
  void apply_detached(const Tensor& out, const Tensor& memory, const Tensor& mail, const Tensor& dt,
                      Arena& arena) const override {
    ApanUpdaterContext scratch;
    apply_one(out, scratch, memory, mail, dt, arena);
  }

  // The same with gradient; the copies draw no dropout (they have no row counters of their
  // own). The attention reads each copy's mail and age whole, so both are spread out first.
  void forward_start(const Tensor& out, const Tensor& memory, const CopyMessages&,
                     const CopyMessages& msgs, const CopyTimes& dt, Arena& arena) override {
    start_msgs_ = msgs;
    const int64_t r = msgs.copies;
    Tensor mail = arena.alloc(out.dtype(), Shape(r, cfg_.d_mail()));
    spread_to_copies(mail, msgs.distinct, msgs, /*accumulate=*/false, arena);
    Tensor copy_dt = dt.distinct;
    if (dt.of.defined()) {
      copy_dt = arena.alloc(out.dtype(), Shape(r));
      ops::gather_rows(copy_dt.reshape(Shape(r, 1)),
                       dt.distinct.reshape(Shape(dt.distinct.numel(), 1)), dt.of);
    }
    apply_one(out, start_ctx_, memory, mail, copy_dt, arena);
  }

  void backward_start(const Tensor& d_memory, const Tensor&, const Tensor& d_distinct,
                      const Tensor& d_out, Arena& arena) override {
    const int64_t n = d_out.dim(0);
    Tensor d_mail = arena.alloc(d_out.dtype(), Shape(n, cfg_.d_mail()));
    updater_.backward(d_memory, d_mail.reshape(Shape(n, 1, cfg_.d_mail())), d_out, start_ctx_,
                      arena);
    if (wanted(d_distinct)) collect_to_messages(d_distinct, d_mail, start_msgs_, arena);
  }

 private:
  void apply_one(const Tensor& out, ApanUpdaterContext& ctx, const Tensor& memory,
                 const Tensor& mail, const Tensor& dt, Arena& arena) const {
    const int64_t n = out.dim(0);
    Tensor mail_ts = arena.alloc(out.dtype(), Shape(n, 1));
    ops::fill(mail_ts, 0.0);
    Tensor mask = arena.alloc(DType::u8, Shape(n, 1));
    ops::fill(mask, 1.0);
    updater_.forward(out, ctx, memory, mail.reshape(Shape(n, 1, cfg_.d_mail())), mail_ts, dt, mask,
                     DropoutDraw{}, arena);
  }

  TgnnConfig cfg_;
  ApanMemoryUpdater updater_;
  ApanUpdaterContext ctx_, start_ctx_;
  CopyMessages start_msgs_;
  int64_t n_ = 0;
};

}  // namespace

std::unique_ptr<MemoryPart> make_no_memory(ParameterStore&, const TgnnConfig&) {
  return std::make_unique<NoMemory>();
}

std::unique_ptr<MemoryPart> make_gru_memory(ParameterStore& store, const TgnnConfig& cfg) {
  return std::make_unique<RecurrentMemory>(store, cfg, RecurrentCell::gru);
}

std::unique_ptr<MemoryPart> make_rnn_memory(ParameterStore& store, const TgnnConfig& cfg) {
  return std::make_unique<RecurrentMemory>(store, cfg, RecurrentCell::rnn);
}

std::unique_ptr<MemoryPart> make_attention_memory(ParameterStore& store, const TgnnConfig& cfg) {
  return std::make_unique<AttentionMemory>(store, cfg);
}

std::unique_ptr<MemoryPart> make_memory_part(ParameterStore& store, const TgnnConfig& cfg) {
  return memory_model(cfg.memory).make(store, cfg);
}

DropoutDraw dropout_draw(const TgnnInputs& in, uint32_t stream, const Tensor& ids, int64_t begin,
                         int64_t end, bool training, double p) {
  DropoutDraw d;
  d.training = training;
  d.key = RngKey{in.seed, static_cast<uint32_t>(RngPurpose::dropout) + (stream << 8), in.epoch};
  if (!training || p == 0.0) return d;  // no mask is drawn
  DB_ASSERT(ids.defined() && ids.numel() >= end,
            "tgnn: dropout needs an id per row (TgnnInputs root_id / mem_id), got {} for rows "
            "[{}, {})",
            ids.str(), begin, end);
  d.rows = ops::DropoutRows(ids.rows(begin, end));
  return d;
}

}  // namespace depbloom::model
