// The memory-only smoke job (see smoke_job.h). Every tensor of a step comes from one arena
// reset per batch; parameters, gradients and Adam moments are one flat buffer each.
#include "depbloom/cli/smoke_job.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/arena.h"
#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"
#include "depbloom/graph/negative_sampler.h"
#include "depbloom/graph/neighbour_sampler.h"

namespace depbloom::cli {
namespace {

using ops::Trans;

// Named views into the flat parameter (or gradient) buffer.
struct GruParams {
  Tensor w_ih, b_ih, w_hh, b_hh, te_w, te_b;
};

int64_t param_count(int64_t h, int64_t m, int64_t t) {
  return 3 * h * m + 3 * h + 3 * h * h + 3 * h + 2 * t;
}

GruParams carve(const Tensor& flat, int64_t h, int64_t m, int64_t t) {
  auto* base = static_cast<float*>(flat.raw());
  Device d = flat.device();
  GruParams p;
  int64_t off = 0;
  auto take = [&](Shape s) {
    Tensor v(base + off, DType::f32, s, d);
    off += s.numel();
    return v;
  };
  p.w_ih = take(Shape(3 * h, m));
  p.b_ih = take(Shape(3 * h));
  p.w_hh = take(Shape(3 * h, h));
  p.b_hh = take(Shape(3 * h));
  p.te_w = take(Shape(t));
  p.te_b = take(Shape(t));
  return p;
}

// Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights from Philox, TGN's time-encoding
// frequencies 10^(-9 i / (T-1)), zero biases; built on the host, copied to the device.
void init_params(const Tensor& flat, int64_t h, int64_t m, int64_t t, uint64_t seed) {
  std::vector<float> host(static_cast<size_t>(flat.numel()), 0.0f);
  RngKey key{seed, static_cast<uint32_t>(RngPurpose::init), 0};
  auto uniform_fill = [&](int64_t off, int64_t n, double bound) {
    for (int64_t i = 0; i < n; ++i) {
      float u = uniform_float(philox_u32(key, static_cast<uint64_t>(off + i), 0));
      host[static_cast<size_t>(off + i)] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
  };
  uniform_fill(0, 3 * h * m, 1.0 / std::sqrt(static_cast<double>(m)));
  int64_t w_hh_off = 3 * h * m + 3 * h;
  uniform_fill(w_hh_off, 3 * h * h, 1.0 / std::sqrt(static_cast<double>(h)));
  int64_t te_off = w_hh_off + 3 * h * h + 3 * h;
  for (int64_t i = 0; i < t; ++i)
    host[static_cast<size_t>(te_off + i)] = static_cast<float>(
        std::pow(10.0, -9.0 * static_cast<double>(i) / std::max<int64_t>(1, t - 1)));
  ops::copy(flat, Tensor::wrap(host.data(), flat.shape()));
}

// Host tensor -> a tensor on `d` (the same memory on the CPU, an arena copy on a GPU).
Tensor to_device(const Tensor& host, Arena& arena) {
  if (arena.device().is_cpu()) return host;
  Tensor t = arena.alloc(host.dtype(), host.shape());
  ops::copy(t, host);
  return t;
}

}  // namespace

SmokeReport run_smoke_job(const SmokeOptions& o) {
  data::EventStream stream = data::load_events(o.data_path, o.load);
  data::SplitSpec split_spec;
  split_spec.protocol = o.protocol;
  split_spec.seed = o.seed;
  data::ChronoSplit split = data::make_split(stream, split_spec);
  spdlog::info("split ({}): {} train, {} val, {} test events; {} held-out nodes",
               data::split_protocol_name(split.protocol), split.train.size(), split.val.size(),
               split.test.size(), split.held_out_nodes.size());

  graph::TemporalCsr csr = graph::TemporalCsr::build(stream);
  graph::RecentSampler sampler(csr, o.neighbours, 1);
  graph::TrainNegativeSampler negatives(stream, o.seed);

  const int64_t H = o.memory_dim, T = o.time_dim, M = 2 * H + T, B = o.batch;
  const int64_t N = stream.num_nodes;
  const Device dev = o.device;
  const int64_t P = param_count(H, M, T);
  OwnedTensor params(DType::f32, Shape(P), dev),
      grads = OwnedTensor::zeros(DType::f32, Shape(P), dev);
  OwnedTensor adam_m = OwnedTensor::zeros(DType::f32, Shape(P), dev);
  OwnedTensor adam_v = OwnedTensor::zeros(DType::f32, Shape(P), dev);
  OwnedTensor memory = OwnedTensor::zeros(DType::f32, Shape(N, H), dev);
  init_params(params, H, M, T, o.seed);
  GruParams w = carve(params, H, M, T), g = carve(grads, H, M, T);
  ops::fill(grads, 0.0);
  ops::AdamConfig adam;
  adam.lr = o.lr;

  // Host staging, sized once for the largest batch.
  std::vector<int32_t> self_idx(2 * B), other_idx(2 * B), neg_idx(B), uniq(2 * B), uniq_pos(2 * B);
  std::vector<float> dt(2 * B), targets(2 * B);
  std::vector<double> last_update(N, 0.0), root_times(3 * B);
  std::vector<int32_t> roots(3 * B), last_seen(N, -1);
  graph::BlockBuffers blocks(3 * B, o.neighbours, 1);
  Arena arena(dev, size_t{64} << 20);
  OwnedTensor targets_dev(DType::f32, Shape(2 * B), dev);
  for (int64_t i = 0; i < 2 * B; ++i) targets[static_cast<size_t>(i)] = i < B ? 1.0f : 0.0f;
  ops::copy(targets_dev, Tensor::wrap(targets.data(), Shape(2 * B)));

  SmokeReport rep;
  Stopwatch total;
  std::vector<double> losses;  // one per batch, reserved so the loop never grows it
  losses.reserve(static_cast<size_t>(o.epochs) * (split.train.size() / static_cast<size_t>(B) + 1));
  int64_t step = 0;
  const auto& train = split.train;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    ops::fill(memory, 0.0);
    std::fill(last_update.begin(), last_update.end(), 0.0);
    for (size_t first = 0; first < train.size(); first += static_cast<size_t>(B)) {
      const int64_t b = std::min<int64_t>(B, static_cast<int64_t>(train.size() - first));
      arena.reset();
      {
        ScopedTimer t(&rep.sample_s);
        for (int64_t i = 0; i < b; ++i) {
          int64_t e = train[first + static_cast<size_t>(i)];
          int32_t s = stream.src[e], d = stream.dst[e];
          double ts = stream.ts[e];
          self_idx[i] = s, self_idx[b + i] = d, other_idx[i] = d, other_idx[b + i] = s;
          dt[i] = static_cast<float>(ts - last_update[s]);
          dt[b + i] = static_cast<float>(ts - last_update[d]);
          neg_idx[i] = negatives.draw(e, 0, static_cast<uint32_t>(epoch));
          roots[i] = s, roots[b + i] = d, roots[2 * b + i] = neg_idx[i];
          root_times[i] = root_times[b + i] = root_times[2 * b + i] = ts;
        }
        graph::RootBatch rb;
        rb.nodes = roots.data(), rb.times = root_times.data(), rb.count = 3 * b;
        sampler.sample(rb, static_cast<uint32_t>(epoch), blocks);
      }
      Tensor i_self, i_other, i_neg, mem_self, mem_other, mem_neg, dtt;
      {
        ScopedTimer t(&rep.gather_s);
        i_self = to_device(Tensor::wrap(self_idx.data(), Shape(2 * b)), arena);
        i_other = to_device(Tensor::wrap(other_idx.data(), Shape(2 * b)), arena);
        i_neg = to_device(Tensor::wrap(neg_idx.data(), Shape(b)), arena);
        dtt = to_device(Tensor::wrap(dt.data(), Shape(2 * b)), arena);
        mem_self = arena.alloc(DType::f32, Shape(2 * b, H));
        mem_other = arena.alloc(DType::f32, Shape(2 * b, H));
        mem_neg = arena.alloc(DType::f32, Shape(b, H));
        ops::gather_rows(mem_self, memory, i_self);
        ops::gather_rows(mem_other, memory, i_other);
        ops::gather_rows(mem_neg, memory, i_neg);
      }
      Tensor h_new = arena.alloc(DType::f32, Shape(2 * b, H));
      {
        ScopedTimer t(&rep.compute_s);
        Tensor te = arena.alloc(DType::f32, Shape(2 * b, T));
        Tensor msg = arena.alloc(DType::f32, Shape(2 * b, M));
        Tensor gx = arena.alloc(DType::f32, Shape(2 * b, 3 * H));
        Tensor gh = arena.alloc(DType::f32, Shape(2 * b, 3 * H));
        Tensor gates = arena.alloc(DType::f32, Shape(2 * b, 4 * H));
        ops::time_encode_forward(te, dtt, w.te_w, w.te_b);
        ops::concat_cols(msg, {mem_self, mem_other, te});
        ops::gemm(gx, msg, Trans::N, w.w_ih, Trans::T);
        ops::bias_add(gx, w.b_ih);
        ops::gemm(gh, mem_self, Trans::N, w.w_hh, Trans::T);
        ops::bias_add(gh, w.b_hh);
        ops::gru_cell_forward(h_new, gates, gx, gh, mem_self);
        // Scores: <h_src, h_dst> for the positives, <h_src, m_neg> for the negatives.
        Tensor hs = h_new.rows(0, b).reshape(Shape(b, 1, H)),
               hd = h_new.rows(b, 2 * b).reshape(Shape(b, 1, H));
        Tensor mn = mem_neg.reshape(Shape(b, 1, H));
        Tensor logits = arena.alloc(DType::f32, Shape(2 * b)),
               loss = arena.alloc(DType::f32, Shape(1));
        ops::gemm_batched(logits.rows(0, b).reshape(Shape(b, 1, 1)), hs, Trans::N, hd, Trans::T);
        ops::gemm_batched(logits.rows(b, 2 * b).reshape(Shape(b, 1, 1)), hs, Trans::N, mn,
                          Trans::T);
        Tensor tgt = Tensor(targets_dev.view().raw(), DType::f32, Shape(2 * b), dev);
        if (b < B) {  // the last, short batch: positives then negatives, b of each
          tgt = arena.alloc(DType::f32, Shape(2 * b));
          ops::fill(tgt.rows(0, b), 1.0);
          ops::fill(tgt.rows(b, 2 * b), 0.0);
        }
        ops::bce_with_logits_forward(loss, logits, tgt);
        float loss_host = 0;
        ops::copy(Tensor::wrap(&loss_host, Shape(1)), loss);
        losses.push_back(loss_host);
        DB_ASSERT(std::isfinite(loss_host), "smoke job: loss is {} at batch {}", loss_host, step);

        Tensor dlogits = arena.alloc(DType::f32, Shape(2 * b));
        ops::bce_with_logits_backward(dlogits, logits, tgt, 1.0 / static_cast<double>(2 * b));
        Tensor dpos = dlogits.rows(0, b).reshape(Shape(b, 1, 1)),
               dneg = dlogits.rows(b, 2 * b).reshape(Shape(b, 1, 1));
        Tensor dh = arena.alloc(DType::f32, Shape(2 * b, H));
        Tensor dhs = dh.rows(0, b).reshape(Shape(b, 1, H)),
               dhd = dh.rows(b, 2 * b).reshape(Shape(b, 1, H));
        ops::gemm_batched(dhs, dpos, Trans::N, hd, Trans::N);
        ops::gemm_batched(dhs, dneg, Trans::N, mn, Trans::N, 1.0, 1.0);
        ops::gemm_batched(dhd, dpos, Trans::N, hs, Trans::N);
        Tensor d_gx = arena.alloc(DType::f32, Shape(2 * b, 3 * H)),
               d_gh = arena.alloc(DType::f32, Shape(2 * b, 3 * H));
        Tensor dh_direct = arena.alloc(DType::f32, Shape(2 * b, H));
        ops::gru_cell_backward(d_gx, d_gh, dh_direct, dh, gates, mem_self);
        ops::gemm(g.w_ih, d_gx, Trans::T, msg, Trans::N, 1.0, 1.0);
        ops::bias_grad(g.b_ih, d_gx);
        ops::gemm(g.w_hh, d_gh, Trans::T, mem_self, Trans::N, 1.0, 1.0);
        ops::bias_grad(g.b_hh, d_gh);
        // Stored memory is detached (as in TGL), so only the time encoding's share of the
        // message gradient is needed.
        Tensor d_msg = arena.alloc(DType::f32, Shape(2 * b, M));
        ops::gemm(d_msg, d_gx, Trans::N, w.w_ih, Trans::N);
        Tensor d_mem = arena.alloc(DType::f32, Shape(2 * b, 2 * H)),
               d_te = arena.alloc(DType::f32, Shape(2 * b, T));
        ops::split_cols({d_mem, d_te}, d_msg);
        ops::time_encode_backward(g.te_w, g.te_b, d_te, dtt, w.te_w, w.te_b);
      }
      {
        ScopedTimer t(&rep.optimise_s);
        ops::adam_step(params, grads, adam_m, adam_v, adam, ++step);
        ops::fill(grads, 0.0);
      }
      {
        // Write-back: each node keeps the memory of its last event in the batch. Without a
        // row-assignment op the rows are cleared by adding their negation (x + -x == 0
        // exactly) and the new rows added; the models issue brings a scatter-set op.
        ScopedTimer t(&rep.write_back_s);
        int64_t nu = 0;
        // Walk events from the last one back, so the first visit of a node is its last event.
        for (int64_t k = b - 1; k >= 0; --k) {
          for (int64_t side = 1; side >= 0; --side) {
            int64_t pos = side * b + k;
            int32_t v = self_idx[static_cast<size_t>(pos)];
            if (last_seen[v] == static_cast<int32_t>(step)) continue;
            last_seen[v] = static_cast<int32_t>(step);
            uniq[nu] = v, uniq_pos[nu] = static_cast<int32_t>(pos), ++nu;
            last_update[v] = stream.ts[train[first + static_cast<size_t>(k)]];
          }
        }
        Tensor u = to_device(Tensor::wrap(uniq.data(), Shape(nu)), arena);
        Tensor up = to_device(Tensor::wrap(uniq_pos.data(), Shape(nu)), arena);
        Tensor old_rows = arena.alloc(DType::f32, Shape(nu, H)),
               new_rows = arena.alloc(DType::f32, Shape(nu, H));
        ops::gather_rows(old_rows, memory, u);
        ops::scale(old_rows, -1.0);
        ops::scatter_add_rows(memory, old_rows, u);
        ops::gather_rows(new_rows, h_new, up);
        ops::scatter_add_rows(memory, new_rows, u);
      }
      rep.events += b;
    }
  }
  if (dev.is_cuda()) backend::synchronize(dev.index);
  rep.seconds = total.seconds();
  size_t tenth = std::max<size_t>(1, losses.size() / 10);
  for (size_t i = 0; i < tenth; ++i) rep.first_loss += losses[i] / static_cast<double>(tenth);
  for (size_t i = losses.size() - tenth; i < losses.size(); ++i)
    rep.last_loss += losses[i] / static_cast<double>(tenth);
  return rep;
}

}  // namespace depbloom::cli
