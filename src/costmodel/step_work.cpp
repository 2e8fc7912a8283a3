// The stage work of a step, layer by layer, as src/model/*.cpp make it: every GEMM shape
// (m, n, k) in the order the layers call ops::gemm, forward and backward (only the input
// gradients the model asks for), the bytes of the other ops and the op calls. The GEMM
// shapes are exact; bytes and op calls are estimates of the layers' element-wise work.
#include "depbloom/costmodel/step_work.h"

#include "depbloom/core/error.h"
#include "depbloom/model/memory_model.h"

namespace depbloom::costmodel {
using train::kStages;
using train::Stage;
namespace {

using model::AttentionStyle;
using model::EmbeddingKind;
using model::MemoryKind;

// Collects a layer's work into the forward stage and the backward; the memory models'
// work functions (model/memory_model.h) write to it too.
struct Sink final : model::WorkSink {
  Sink(StageWork& forward, StageWork& backward, double value_bytes)
      : fwd(forward), bwd(backward), vb(value_bytes) {}
  StageWork& fwd;
  StageWork& bwd;
  double vb;
  void gemm(bool backward, int64_t m, int64_t n, int64_t k, int64_t count) override {
    StageWork& s = backward ? bwd : fwd;
    if (m > 0 && n > 0 && k > 0 && count > 0) s.gemms.push_back({m, n, k, count});
  }
  void values(double forward, double backward) override {
    fwd.bytes += vb * forward;
    bwd.bytes += vb * backward;
  }
  void ops(int64_t forward, int64_t backward) override {
    fwd.ops += forward;
    bwd.ops += backward;
  }
  // y = x W^T (+ b): forward [rows, out] from [rows, in]; backward dW always, dx if wanted.
  void linear(int64_t rows, int64_t in, int64_t out, bool want_dx) {
    f(rows, out, in);
    b(out, in, rows);
    if (want_dx) b(rows, in, out);
  }
};

// TemporalAttentionLayer i over hop j: r roots of k slots; layer 0 may read its neighbours
// as rows of the `table` updated rows (table mode).
void attention_layer(Sink& s, const model::TgnnConfig& c, int layer, int64_t r, bool table,
                     int64_t table_rows, bool want_inputs, double vb) {
  const int64_t k = c.neighbours, n = r * k;
  const int64_t d_in = layer == 0 ? c.d_input() : c.d_emb, d_time = c.d_gnn_time;
  const int64_t q_in = d_in + d_time, kv_in = d_in + c.d_edge + d_time, rest = c.d_edge + d_time;
  const bool tgn = c.attention_style == AttentionStyle::tgn;
  const int64_t a = tgn ? (q_in + c.heads - 1) / c.heads * c.heads : c.d_emb;
  const int64_t o_in = a + d_in, d_out = c.d_emb;
  s.f(r, a, q_in);
  if (table) {
    s.f(table_rows, a, d_in, 2);
    s.f(n, a, rest, 2);
  } else {
    s.f(n, a, kv_in, 2);
  }
  if (tgn) {
    s.f(r, a, a);
    s.f(r, d_in, o_in);
    s.f(r, d_out, d_in);
    s.b(d_out, d_in, r), s.b(r, d_in, d_out);  // w_2
    s.b(d_in, o_in, r), s.b(r, o_in, d_in);    // w_1
    s.b(a, a, r), s.b(r, a, a);                // w_p
  } else {
    s.f(r, d_out, o_in);
    s.b(d_out, o_in, r), s.b(r, o_in, d_out);  // w_o
  }
  s.b(a, q_in, r), s.b(r, q_in, a);  // query
  if (table) {
    s.b(a, d_in, table_rows, 2);  // dW of the table's columns, from the per-row sums
    s.b(a, rest, n, 2);           // dW of [e || te]
    if (want_inputs) s.b(table_rows, d_in, a, 2);
    s.b(n, d_time, a, 2);
  } else {
    s.b(a, kv_in, n, 2);
    if (want_inputs) s.b(n, d_in, a, 2);
    s.b(n, d_time, a, 2);
  }
  const int64_t kv_bytes =
      table ? table_rows * a * 2 + n * (rest * 2 + a * 6) : n * (kv_in * 2 + a * 4);
  const double io = static_cast<double>(r * (d_in * 2 + q_in * 2 + a * 6 + o_in * 2 + d_out * 4) +
                                        n * (c.d_edge * 2 + d_time + a * 2 + c.heads) + kv_bytes);
  s.fwd.bytes += vb * io;
  s.bwd.bytes += 2 * vb * io;
  s.fwd.ops += table ? 29 : 25;
  s.bwd.ops += table ? 46 : 36;
}

// The embedding of (2+K)B roots: L attention layers over sampled hops, JODIE's projection,
// or the identity (a gather). A table-mode layer at hop j projects the slot_reads[j] rows
// its slots read, gathered from the updated rows and their gradient scattered back.
void embedding(Sink& s, const model::TgnnConfig& c, int64_t roots, int64_t updated_rows,
               const std::array<int64_t, model::kMaxHops>& slot_reads, double vb) {
  const bool memory = c.memory != MemoryKind::none;
  if (c.embedding == EmbeddingKind::identity) {
    s.fwd.bytes += vb * static_cast<double>(roots * c.d_input() * 2);
    s.bwd.bytes += vb * static_cast<double>(roots * c.d_input() * 2);
    s.fwd.ops += 1, s.bwd.ops += 1;
    return;
  }
  if (c.embedding == EmbeddingKind::jodie) {
    s.f(roots, c.d_mem, 1);
    s.b(c.d_mem, 1, roots);
    s.fwd.bytes += vb * static_cast<double>(roots * c.d_mem * 6 + updated_rows * 4);
    s.bwd.bytes += vb * static_cast<double>(roots * c.d_mem * 6);
    s.fwd.ops += 10, s.bwd.ops += 6;
    return;
  }
  const int64_t k = c.neighbours;
  auto hop_roots = [&](int hop) {
    int64_t r = roots;
    for (int j = 0; j < hop; ++j) r *= k;
    return r;
  };
  for (int i = 0; i < c.layers; ++i)
    for (int j = 0; j < c.layers - i; ++j) {
      bool table = false;
      const int64_t read = slot_reads[static_cast<size_t>(j)];
      if (i == 0)
        table = c.neighbour_reads == model::NeighbourReads::automatic
                    ? read < hop_roots(j) * k
                    : c.neighbour_reads == model::NeighbourReads::table;
      attention_layer(s, c, i, hop_roots(j), table, read, i > 0 || memory, vb);
      if (table) {  // the gather, and the backward's zeroed rows and scatter-add
        s.fwd.bytes += vb * static_cast<double>(read * c.d_input() * 2);
        s.bwd.bytes += vb * static_cast<double>(read * c.d_input() * 4);
        s.fwd.ops += 1, s.bwd.ops += 2;
      }
    }
}

// MemoryRefiner over R copies from T terms over D distinct messages and Dt distinct gaps: the
// gate and fc1 read the copies' memory per copy, and the messages and the gaps' time
// encodings once each (projected, then spread over the copies; `mean` weighs each term,
// element-wise), then fc2; forward and backward, with the memory's and the messages' gradients.
void refiner(Sink& s, const model::TgnnConfig& c, int64_t r, int64_t t, int64_t msgs, int64_t gaps,
             bool mean, double vb) {
  const int64_t d = c.d_mem, h = c.refine_hidden, dm = c.d_mail(), tm = c.d_mem_time;
  for (const int64_t out : {d, h}) {  // the gate, then fc1
    s.f(r, out, d), s.f(gaps, out, tm), s.f(msgs, out, dm);
    s.b(out, d, r), s.b(out, tm, gaps), s.b(out, dm, msgs), s.b(msgs, dm, out);
    s.b(r, d, out), s.b(gaps, tm, out);
  }
  s.f(r, d, h);  // fc2
  s.b(d, h, r), s.b(r, h, d);
  const double io = static_cast<double>(r * (d * 14 + h * 4) + gaps * tm * 2 + msgs * dm * 4 +
                                        t * (d + h) * (mean ? 6 : 4) + r * (d + h) * 2);
  s.fwd.bytes += vb * io;
  s.bwd.bytes += 2 * vb * io;
  s.fwd.ops += 24, s.bwd.ops += 28;
}

// TGL's edge predictor over B sources and (1+K)B destinations, then the loss.
void predictor(Sink& s, const model::TgnnConfig& c, int64_t batch, int64_t pairs, double vb) {
  const int64_t dim = c.d_out();
  s.linear(batch, dim, dim, true);  // src_fc
  s.linear(pairs, dim, dim, true);  // dst_fc
  s.linear(pairs, dim, 1, true);    // out_fc
  const double io = static_cast<double>(pairs * dim * 8 + batch * dim * 2 + pairs * 6);
  s.fwd.bytes += vb * io;
  s.bwd.bytes += 2 * vb * io;
  s.fwd.ops += 10, s.bwd.ops += 10;
}

}  // namespace

int64_t StageWork::flops() const {
  int64_t total = 0;
  for (const GemmShape& g : gemms) total += gemm_flops(g);
  return total;
}

void step_stage_work(StepStageWork& out, const WorkModel& wm, const StepWork& step) {
  for (StageWork& s : out) s = StageWork{};
  const model::TgnnConfig& c = wm.model;
  const auto vb = static_cast<double>(wm.value_bytes);
  auto at = [&](Stage st) -> StageWork& { return out[static_cast<size_t>(st)]; };
  // The optimiser steps every parameter even after an empty step (Adam's moments, then the
  // gradients zeroed).
  at(Stage::optimise).bytes = vb * static_cast<double>(wm.parameters * 8);
  at(Stage::optimise).ops = 2;
  at(Stage::reduce).ops = 1;
  if (step.events == 0) return;
  const bool memory = c.memory != MemoryKind::none;
  const int64_t b = step.events, roots = (2 + step.negatives) * b;
  const int64_t pairs = (1 + step.negatives) * b, u = step.memory_rows;
  const int64_t d_mail = c.d_mail(), slots = c.mailbox;

  // Host: planned roots and slots, staged inputs copied to the device.
  StageWork& sample = at(Stage::sample);
  sample.bytes = static_cast<double>(
      u * (4 + wm.value_bytes) + roots * 4 + step.sampled_slots * (13 + wm.value_bytes) +
      step.refined_rows * (4 + wm.value_bytes) + step.refine_terms * 20);
  // 16 op calls, all of them uploads of the staged inputs (BatchStager::stage on a GPU).
  sample.ops = 16;
  sample.uploads = 16;
  if (memory) {
    at(Stage::gather).bytes =
        vb * static_cast<double>(u * (c.d_mem + 1 + slots * (d_mail + 1)) * 2);
    at(Stage::gather).ops = 4;
  }
  Sink mem(at(Stage::memory_update), at(Stage::backward), vb);
  const int64_t n = step.updated_rows;
  const model::MemoryModel& updater = model::memory_model(c.memory);
  if (memory) mem.fwd.bytes += vb * static_cast<double>((u - n) * c.d_mem * 2);
  if (memory && n > 0) updater.work(mem, c, n);
  mem.fwd.ops += 1;
  if (step.refined_rows > 0) {
    Sink ref(at(Stage::refine), at(Stage::backward), vb);
    if (c.refine_start == model::RefineStart::updater) {
      DB_ASSERT(updater.start_work != nullptr, "memory model '{}' has no updater start",
                updater.name);
      updater.start_work(ref, c,
                         {step.refined_rows, step.refine_terms, step.refine_messages,
                          step.refine_bases, step.refine_gaps});
    }
    refiner(ref, c, step.refined_rows, step.refine_terms, step.refine_messages, step.refine_gaps,
            wm.refine_mean, vb);
  }
  Sink emb(at(Stage::embed), at(Stage::backward), vb);
  embedding(emb, c, roots, u + step.refined_rows, step.slot_reads, vb);
  Sink loss(at(Stage::loss), at(Stage::backward), vb);
  predictor(loss, c, b, pairs, vb);
  if (memory) {
    StageWork& wb = at(Stage::write_back);
    const int64_t rows = step.written_rows + step.applied_rows;
    const int64_t mails = step.written_mails + step.applied_mails;
    wb.bytes = vb * static_cast<double>(rows * (c.d_mem + 1) * 2 + mails * (d_mail + 1) * 2);
    wb.ops = 12;
  }
}

StepFlops step_flops(const StepStageWork& work) {
  StepFlops f;
  for (int i = 0; i < kStages; ++i) {
    const int64_t x = work[static_cast<size_t>(i)].flops();
    if (static_cast<Stage>(i) == Stage::backward) {
      f.backward += x;
    } else {
      f.forward += x;
    }
  }
  return f;
}

}  // namespace depbloom::costmodel
