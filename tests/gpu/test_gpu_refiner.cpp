// GPU suite, the memory refiner (model::MemoryRefiner, issue 17) as a whole layer: on cuda:0
// its output, its memory and distinct-message gradients and every parameter gradient equal the
// CPU's from the same parameters and inputs (float32, TF32 off), rows 1 to 257, with messages
// shared by several copies and weighted terms, outputs guarded.
// It is built from existing ops only, so this checks their composition, not new kernels.
// Skips without a usable GPU.
#include <gtest/gtest.h>

#include "depbloom/core/arena.h"
#include "depbloom/model/memory_refiner.h"
#include "depbloom/model/parameters.h"
#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using depbloom::Arena;
using depbloom::Device;
using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::model::CopyMessages;
using depbloom::model::CopyTimes;
using depbloom::model::MemoryRefiner;
using depbloom::model::MemoryRefinerContext;
using depbloom::model::ParameterStore;
using F = Both<float>;

class GpuRefiner : public GpuTest {};

// The flat f32 blob of `t` (on either device) as doubles on the host.
std::vector<double> host_values(const Tensor& t) {
  OwnedTensor host(DType::f32, t.shape());
  ops::copy(host.view(), t);
  depbloom::backend::synchronize(0);
  const float* p = host.data<float>();
  return std::vector<double>(p, p + t.numel());
}

TEST_F(GpuRefiner, ForwardAndBackwardEqualTheCpu) {
  Rand rng(3300);
  const int64_t d_mem = 33, d_msg = 17, d_time = 7, hidden = 64;
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{257}}) {
    SCOPED_TRACE(testing::Message() << "rows " << rows);
    ParameterStore cpu_store(DType::f32, Device::cpu()), gpu_store(DType::f32, kGpu);
    MemoryRefiner cpu_ref(cpu_store, "refine", d_mem, d_msg, d_time, hidden);
    MemoryRefiner gpu_ref(gpu_store, "refine", d_mem, d_msg, d_time, hidden);
    cpu_store.finalize();
    gpu_store.finalize();
    cpu_store.initialize(5);
    // fc2 starts at zero (f = 0); a live f on the CPU, then the same values on the GPU.
    const Tensor w2 = cpu_store.value("refine.fc2.weight"), b2 = cpu_store.value("refine.fc2.bias");
    const auto w2v = rng.vec(w2.numel(), -0.3, 0.3), b2v = rng.vec(b2.numel(), -0.3, 0.3);
    for (int64_t i = 0; i < w2.numel(); ++i) w2.data<float>()[i] = static_cast<float>(w2v[i]);
    for (int64_t i = 0; i < b2.numel(); ++i) b2.data<float>()[i] = static_cast<float>(b2v[i]);
    ops::copy(gpu_store.values(), cpu_store.values());
    cpu_store.zero_grad();
    gpu_store.zero_grad();

    for (bool last : {false, true}) {
      SCOPED_TRACE(testing::Message() << "rows " << rows << (last ? ", last" : ", mean"));
      // Every copy names one of rows / 3 + 1 shared messages; with `mean` every other copy a
      // second one too, both at weight 1/2; with `last` one term per copy, unweighted (the
      // gather / scatter-add path).
      const int64_t n_msg = rows / 3 + 1;
      std::vector<double> row_v, msg_v, weight_v;
      for (int64_t c = 0; c < rows; ++c) {
        const int64_t terms = c % 2 == 1 && !last ? 2 : 1;
        for (int64_t k = 0; k < terms; ++k) {
          row_v.push_back(static_cast<double>(c));
          msg_v.push_back(static_cast<double>((7 * c + 3 * k) % n_msg));
          weight_v.push_back(1.0 / static_cast<double>(terms));
        }
      }
      const auto t = static_cast<int64_t>(row_v.size());
      Both<int32_t> row(Shape(t), row_v), msg(Shape(t), msg_v);
      F weight(Shape(t), weight_v);
      F s(Shape(rows, d_mem), rng.vec(rows * d_mem));
      F distinct(Shape(n_msg, d_msg), rng.vec(n_msg * d_msg));
      // With `last` the copies share rows / 2 + 1 gaps (CopyTimes), with `mean` each has its own.
      const int64_t n_gap = last ? rows / 2 + 1 : rows;
      std::vector<double> gap_of_v;
      for (int64_t c = 0; c < rows; ++c)
        gap_of_v.push_back(static_cast<double>((5 * c + 1) % n_gap));
      Both<int32_t> gap_of(Shape(rows), gap_of_v);
      F dt(Shape(n_gap), rng.vec(n_gap, 0.1, 50.0));
      const CopyTimes cpu_dt = last ? CopyTimes{dt.cpu, gap_of.cpu} : CopyTimes{dt.cpu};
      const CopyTimes gpu_dt = last ? CopyTimes{dt.gpu, gap_of.gpu} : CopyTimes{dt.gpu};
      const Tensor cpu_w = last ? Tensor{} : static_cast<Tensor>(weight.cpu);
      const Tensor gpu_w = last ? Tensor{} : static_cast<Tensor>(weight.gpu);
      const CopyMessages cpu_msgs{distinct.cpu, row.cpu, msg.cpu, cpu_w, rows, last};
      const CopyMessages gpu_msgs{distinct.gpu, row.gpu, msg.gpu, gpu_w, rows, last};
      F out = F::nan(Shape(rows, d_mem));
      Arena cpu_arena(Device::cpu()), gpu_arena(kGpu);
      MemoryRefinerContext cpu_ctx, gpu_ctx;
      cpu_ref.forward(out.cpu, cpu_ctx, s.cpu, cpu_msgs, cpu_dt, cpu_arena);
      gpu_ref.forward(out.gpu, gpu_ctx, s.gpu, gpu_msgs, gpu_dt, gpu_arena);
      EXPECT_TRUE(out.matches_norm());

      F d_out(Shape(rows, d_mem), rng.vec(rows * d_mem));
      F d_s = F::nan(Shape(rows, d_mem));
      F d_distinct(Shape(n_msg, d_msg), std::vector<double>(n_msg * d_msg, 0.0));
      cpu_ref.backward(d_s.cpu, d_distinct.cpu, d_out.cpu, cpu_ctx, cpu_arena);
      gpu_ref.backward(d_s.gpu, d_distinct.gpu, d_out.gpu, gpu_ctx, gpu_arena);
      EXPECT_TRUE(d_s.matches_norm());
      EXPECT_TRUE(d_distinct.matches_norm());
      for (const auto& e : cpu_store.entries()) {
        SCOPED_TRACE(e.name);
        EXPECT_TRUE(norm_close(host_values(gpu_store.grad(e.name)),
                               host_values(cpu_store.grad(e.name)), 1e-5));
      }
    }
  }
}

}  // namespace
}  // namespace dbtest
