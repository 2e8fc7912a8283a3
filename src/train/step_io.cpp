// stage() and collect(): a BatchPlan to the model's inputs, the model's outputs to the
// WriteSet the plan announced.
#include "depbloom/train/step_io.h"

#include "depbloom/backend/ops.h"
#include "depbloom/backend/upload.h"

namespace depbloom::train {

StepArena::StepArena(Device device)
    : device_(device),
      staging_{
          Arena(Device::cpu(), 0, device.is_cuda() ? HostMemory::pinned : HostMemory::pageable),
          Arena(Device::cpu(), 0, device.is_cuda() ? HostMemory::pinned : HostMemory::pageable)} {
  if (device.is_cuda()) device_.set_staging(&staging_[current_]);
}

void StepArena::reset() {
  device_.reset();
  if (device_.device().is_cpu()) return;
  // Copies from this step's staging arena are queued before this mark; the other arena's
  // mark is a step older, and a loss read (a host wait) has followed it since.
  marks_[current_].record(device_.device().index);
  current_ ^= 1;
  marks_[current_].wait();
  staging_[current_].reset();
  device_.set_staging(&staging_[current_]);
}

namespace {

// Times in `dtype` (f64 ones are the host array itself on a CPU run).
Tensor times_in(DType dtype, const std::vector<double>& times, StepArena& arena) {
  const Shape shape(static_cast<int64_t>(times.size()));
  if (dtype == DType::f64) return upload(arena.device(), times.data(), shape);
  Tensor host = arena.host().alloc(DType::f32, shape);
  for (size_t i = 0; i < times.size(); ++i) host.data<float>()[i] = static_cast<float>(times[i]);
  return upload(arena.device(), host);
}

// Plan rows -> input rows of the staged batch, on the device.
Tensor input_rows(const std::vector<int32_t>& rows, const StagedBatch& staged, StepArena& arena) {
  const auto n = static_cast<int64_t>(rows.size());
  if (staged.row_of == nullptr) return upload(arena.device(), rows.data(), Shape(n));
  Tensor host = arena.host().alloc(DType::i32, Shape(n));
  for (int64_t i = 0; i < n; ++i)
    host.data<int32_t>()[i] = staged.input_row(rows[static_cast<size_t>(i)]);
  return upload(arena.device(), host);
}

}  // namespace

// Stable partition of the memory rows: those whose node holds a mail first (the model
// updates only them), then the rest.
void BatchStager::order_rows_by_mail(const BatchPlan& plan, const model::NodeState& state) {
  const size_t u = plan.mem_node.size();
  row_of_.resize(u);
  order_.resize(u);
  int32_t next = 0;
  for (size_t i = 0; i < u; ++i)
    if (state.mail_count(plan.mem_node[i]) > 0) row_of_[i] = next++;
  with_mail_ = next;
  for (size_t i = 0; i < u; ++i)
    if (state.mail_count(plan.mem_node[i]) == 0) row_of_[i] = next++;
  for (size_t i = 0; i < u; ++i) order_[static_cast<size_t>(row_of_[i])] = static_cast<int32_t>(i);
}

StagedBatch BatchStager::stage(const BatchPlan& plan, const model::NodeState& state,
                               StepArena& arena) {
  StagedBatch out;
  model::TgnnInputs& in = out.in;
  in.events = plan.batch();
  in.negatives = plan.negatives_k;
  with_mail_ = -1;
  if (cfg_.skip_empty_mailbox && cfg_.memory) {
    order_rows_by_mail(plan, state);
    out.row_of = row_of_.data();
  }
  in.mem_with_mail = with_mail_;
  const int64_t u = plan.memory_rows();
  out.memory_rows = u;
  const auto in_order = [&](const auto& plan_rows, auto& staged) {
    staged.resize(plan_rows.size());
    for (int64_t r = 0; r < u; ++r)
      staged[static_cast<size_t>(r)] =
          plan_rows[static_cast<size_t>(with_mail_ < 0 ? r : order_[static_cast<size_t>(r)])];
  };
  in_order(plan.mem_node, mem_node_);
  in_order(plan.mem_time, mem_time_);
  in.mem_node = upload(arena.device(), mem_node_.data(), Shape(u));
  in.mem_time = times_in(dtype_, mem_time_, arena);
  if (cfg_.jodie) {
    inv_time_.resize(static_cast<size_t>(u));
    for (size_t i = 0; i < inv_time_.size(); ++i) inv_time_[i] = 1.0 / (mem_time_[i] + 1.0);
    in.mem_inv_time = times_in(dtype_, inv_time_, arena);
  }
  if (cfg_.mail_mask) {
    const int slots = state.mail_slots();
    Tensor mask = arena.host().alloc(DType::u8, Shape(u, slots));
    for (int64_t i = 0; i < u; ++i) {
      const int have = state.mail_count(mem_node_[static_cast<size_t>(i)]);
      for (int s = 0; s < slots; ++s) mask.data<uint8_t>()[i * slots + s] = s < have;
    }
    in.mem_mask = upload(arena.device(), mask);
    in_order(plan.mem_id, mem_id_);
    in.mem_id = upload(arena.device(), mem_id_.data(), Shape(u));
  }
  in.root_row = input_rows(plan.root_row, out, arena);
  for (int32_t l = 0; l < cfg_.hops; ++l) {
    const graph::Block& blk = plan.blocks.hop(l);
    const Shape grid(blk.num_roots, blk.k);
    in.root_id[l] =
        upload(arena.device(), plan.root_id[static_cast<size_t>(l)].data(), Shape(blk.num_roots));
    in.slot_row[l] = input_rows(plan.slot_row[static_cast<size_t>(l)], out, arena);
    const auto& read_of = plan.slot_read_of[static_cast<size_t>(l)];
    in.slot_read[l] = input_rows(plan.slot_read[static_cast<size_t>(l)], out, arena);
    in.slot_read_of[l] =
        upload(arena.device(), read_of.data(), Shape(static_cast<int64_t>(read_of.size())));
    in.slot_eid[l] = upload(arena.device(), blk.eid, Shape(blk.num_slots()));
    in.slot_mask[l] = upload(arena.device(), blk.mask, grid);
    if (dtype_ == DType::f32) {
      in.slot_dt[l] = upload(arena.device(), blk.dt, grid);
    } else {
      Tensor dt = arena.host().alloc(DType::f64, grid);
      for (int64_t s = 0; s < blk.num_slots(); ++s) dt.data<double>()[s] = blk.dt[s];
      in.slot_dt[l] = upload(arena.device(), dt);
    }
  }
  if (plan.refined_rows() > 0) stage_refine(out, plan, arena);
  return out;
}

// The copies' base rows and dt, the aggregation terms, and each distinct message as collect()
// builds the mail: the node's updated row at that event, its partner's, and the event's edge
// features.
void BatchStager::stage_refine(StagedBatch& out, const BatchPlan& plan, StepArena& arena) {
  model::TgnnInputs& in = out.in;
  const RefinePlan& rp = plan.refine;
  const int64_t r = plan.refined_rows(), t = rp.terms();
  const int64_t n = rp.messages();
  msg_self_.resize(static_cast<size_t>(n));
  msg_other_.resize(static_cast<size_t>(n));
  msg_eid_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto at = static_cast<size_t>(i);
    // TGL's root-mail order: the mail node n got from the event at position p is 2p + role.
    const auto mail = static_cast<size_t>(2 * rp.msg_pos[at] + rp.msg_role[at]);
    msg_self_[at] = out.input_row(plan.writes.mail_row[mail]);
    msg_other_[at] = out.input_row(plan.writes.mail_other[mail]);
    msg_eid_[at] = plan.writes.mail_event[mail];
  }
  in.refine.row = input_rows(plan.refine.row, out, arena);
  in.refine.base = input_rows(plan.refine.base, out, arena);
  // Base rows are listed only for the updater start (PlanConfig::refine_bases), else empty.
  in.refine.base_of = upload(arena.device(), plan.refine.base_of.data(),
                             Shape(static_cast<int64_t>(plan.refine.base_of.size())));
  in.refine.dt = times_in(dtype_, plan.refine.dt, arena);
  in.refine.dts = times_in(dtype_, plan.refine.dts, arena);
  in.refine.dt_of = upload(arena.device(), plan.refine.dt_of.data(), Shape(r));
  in.refine.term_row = upload(arena.device(), rp.term_row.data(), Shape(t));
  in.refine.term_msg = upload(arena.device(), rp.term_msg.data(), Shape(t));
  in.refine.msg_self = upload(arena.device(), msg_self_.data(), Shape(n));
  in.refine.msg_other = upload(arena.device(), msg_other_.data(), Shape(n));
  in.refine.msg_eid = upload(arena.device(), msg_eid_.data(), Shape(n));
  if (cfg_.refine_aggregate == RefineAggregate::mean)
    in.refine.term_weight = times_in(dtype_, rp.term_weight, arena);
  // `last` plans copy c's one term as term c (RefinePlan); CopyMessages checks T = R.
  in.refine.term_one_per_copy = cfg_.refine_aggregate == RefineAggregate::last;
  if (!plan.refine.mail_dt.empty()) {
    in.refine.mail_dt = times_in(dtype_, plan.refine.mail_dt, arena);
    in.refine.first = times_in(dtype_, plan.refine.first, arena);
  }
  if (!plan.coherence.copy.empty()) stage_coherence(out, plan, arena);
}

// The coherence loss's copies and, per round, the mails the updater applies to them.
void BatchStager::stage_coherence(StagedBatch& out, const BatchPlan& plan, StepArena& arena) {
  model::TgnnInputs& in = out.in;
  const PlannedWrites& w = plan.writes;
  const auto entries = static_cast<int64_t>(plan.coherence.mail.size());
  coh_self_.resize(static_cast<size_t>(entries));
  coh_other_.resize(static_cast<size_t>(entries));
  coh_eid_.resize(static_cast<size_t>(entries));
  for (int64_t i = 0; i < entries; ++i) {
    const auto at = static_cast<size_t>(i);
    const auto mail = static_cast<size_t>(plan.coherence.mail[at]);
    coh_self_[at] = out.input_row(w.mail_row[mail]);
    coh_other_[at] = out.input_row(w.mail_other[mail]);
    coh_eid_[at] = w.mail_event[mail];
  }
  const auto copies = static_cast<int64_t>(plan.coherence.copy.size());
  in.coherence.copy = upload(arena.device(), plan.coherence.copy.data(), Shape(copies));
  in.coherence.round = Tensor::wrap(const_cast<int64_t*>(plan.coherence.round.data()),
                                    Shape(static_cast<int64_t>(plan.coherence.round.size())));
  in.coherence.self = upload(arena.device(), coh_self_.data(), Shape(entries));
  in.coherence.other = upload(arena.device(), coh_other_.data(), Shape(entries));
  in.coherence.eid = upload(arena.device(), coh_eid_.data(), Shape(entries));
  in.coherence.dt = times_in(dtype_, plan.coherence.dt, arena);
}

model::WriteSet collect(const BatchPlan& plan, const StagedBatch& staged, const PlanConfig& cfg,
                        const Tensor& updated, const Tensor& last_update, const Tensor& edge_feat,
                        StepArena& arena) {
  model::WriteSet out;
  if (!cfg.memory) return out;
  const PlannedWrites& w = plan.writes;
  const DType dtype = updated.dtype();
  const int64_t d_mem = updated.dim(1);
  const int64_t d_edge = edge_feat.defined() ? edge_feat.dim(1) : 0;
  Arena& dev = arena.device();
  // Memory rows: detached copies of the model's output at each node's last event.
  out.mem_node = w.mem_node.data();
  out.mem_count = static_cast<int64_t>(w.mem_node.size());
  out.mem_rows = dev.alloc(dtype, Shape(out.mem_count, d_mem));
  ops::gather_rows(out.mem_rows, updated, input_rows(w.mem_row, staged, arena));
  out.mem_time = times_in(dtype, w.mem_time, arena);
  // Mails [m, d_mail] = [s_self || s_other || edge features].
  const int64_t m = w.mail_count();
  out.mail_node = w.mail_node.data();
  out.mail_count = m;
  const Tensor self_rows = input_rows(w.mail_row, staged, arena);
  const Tensor other_rows = input_rows(w.mail_other, staged, arena);
  out.mail_rows = dev.alloc(dtype, Shape(m, 2 * d_mem + d_edge));
  if (d_edge > 0) {
    ops::gather_cols(out.mail_rows, {{updated, self_rows},
                                     {updated, other_rows},
                                     {edge_feat, upload(dev, w.mail_event.data(), Shape(m))}});
  } else {
    ops::gather_cols(out.mail_rows, {{updated, self_rows}, {updated, other_rows}});
  }
  out.mail_time = times_in(dtype, w.mail_time, arena);
  if (cfg.mail_dt_at_event) {
    // The TGN authors' message time: the gap since the writer's previous update, as of now.
    const int64_t u = updated.dim(0);
    DB_ASSERT(last_update.numel() == u, "collect: last_update is {} for {} rows", last_update.str(),
              u);
    Tensor prev = dev.alloc(dtype, Shape(m, 1));
    ops::gather_rows(prev, last_update.reshape(Shape(u, 1)), self_rows);
    Tensor dt = dev.alloc(dtype, Shape(m));
    ops::sub(dt, out.mail_time, prev.reshape(Shape(m)));
    out.mail_time = dt;
  }
  return out;
}

}  // namespace depbloom::train
