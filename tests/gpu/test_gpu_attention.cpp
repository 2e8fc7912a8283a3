// GPU suite, neighbour ops: masked softmax, attention (heads 1 and 2, slopes 0.2 and 1,
// invalid slots and a fully masked row) and dropout (keep masks equal to the CPU's bit for
// bit) on cuda:0 against the CPU ops. Every test skips without a usable GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using F = Both<float>;
using U8 = Both<uint8_t>;

class GpuAttention : public GpuTest {};

TEST_F(GpuAttention, MaskedSoftmax) {
  Rand rng(3100);
  for (auto [R, K] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {257, 7}, {100, 257}}) {
    SCOPED_TRACE(testing::Message() << "R " << R << " K " << K);
    F x(Shape(R, K), rng.vec(R * K, -5.0, 5.0)), y = F::nan(Shape(R, K));
    U8 mask(make_mask(rng, R, K));
    ops::masked_softmax_forward(y.cpu, x.cpu, mask.cpu);
    ops::masked_softmax_forward(y.gpu, x.gpu, mask.gpu);
    EXPECT_TRUE(y.matches());
    F dy(Shape(R, K), rng.vec(R * K)), dx = F::nan(Shape(R, K));
    ops::masked_softmax_backward(dx.cpu, dy.cpu, y.cpu);
    ops::masked_softmax_backward(dx.gpu, dy.gpu, y.gpu);
    EXPECT_TRUE(dx.matches());
  }
}

TEST_F(GpuAttention, ForwardAndBackward) {
  Rand rng(3101);
  const int64_t cases[][4] = {{1, 1, 1, 1},   {7, 33, 2, 7},   {33, 7, 1, 33},
                              {100, 1, 2, 3}, {5, 100, 2, 16}, {3, 257, 1, 7}};
  for (const auto& c : cases)
    for (double slope : {0.2, 1.0}) {
      const int64_t R = c[0], K = c[1], H = c[2], D = c[3], W = H * D;
      SCOPED_TRACE(testing::Message()
                   << "R " << R << " K " << K << " H " << H << " D " << D << " slope " << slope);
      const double scale = 1.0 / std::sqrt(static_cast<double>(D));
      Guarded<float> qh(Shape(R, W), rng.vec(R * W)), kh(Shape(R, K, W));
      keep_scores_off_kink(rng, qh.data(), kh.data(), R, K, H, D, scale, 1e-3);
      const Guarded<float> vh(Shape(R, K, W), rng.vec(R * K * W));
      F q(std::move(qh)), kv(stack_kv(kh, vh, R, K, W));
      U8 mask(make_mask(rng, R, K));
      F out = F::nan(Shape(R, W)), attn = F::nan(Shape(R, H, K));
      ops::attention_forward(out.cpu, attn.cpu, q.cpu, kv.cpu, mask.cpu, static_cast<int>(H), scale,
                             slope);
      ops::attention_forward(out.gpu, attn.gpu, q.gpu, kv.gpu, mask.gpu, static_cast<int>(H), scale,
                             slope);
      EXPECT_TRUE(out.matches_norm());
      EXPECT_TRUE(attn.matches());
      F dout(Shape(R, W), rng.vec(R * W));
      F dq = F::nan(Shape(R, W)), dkv = F::nan(Shape(R, K, 2 * W));
      ops::attention_backward(dq.cpu, dkv.cpu, dout.cpu, attn.cpu, q.cpu, kv.cpu, mask.cpu,
                              static_cast<int>(H), scale, slope);
      ops::attention_backward(dq.gpu, dkv.gpu, dout.gpu, attn.gpu, q.gpu, kv.gpu, mask.gpu,
                              static_cast<int>(H), scale, slope);
      EXPECT_TRUE(dq.matches_norm());
      EXPECT_TRUE(dkv.matches_norm());
    }
}

TEST_F(GpuAttention, DropoutMasksEqualTheCpuBitForBit) {
  Rand rng(3102);
  const depbloom::RngKey key{0xfeedbeef12345ULL,
                             static_cast<uint32_t>(depbloom::RngPurpose::dropout) + 3, 7};
  for (Shape s : {Shape(1, 1), Shape(7, 33), Shape(257, 100), Shape(257), Shape(7, 3, 11)})
    for (double p : {0.1, 0.5, 0.75}) {
      SCOPED_TRACE(testing::Message() << s.str() << " p " << p);
      const uint64_t first_row = (uint64_t{1} << 33) + 12345;
      F x(s, rng.vec(s.numel())), y = F::nan(s);
      Guarded<uint8_t> k0(s);
      U8 keep(std::move(k0));
      ops::dropout_forward(y.cpu, keep.cpu, x.cpu, p, key, first_row);
      ops::dropout_forward(y.gpu, keep.gpu, x.gpu, p, key, first_row);
      EXPECT_TRUE(keep.matches_bitwise());
      EXPECT_TRUE(y.matches());
      F dy(s, rng.vec(s.numel())), dx = F::nan(s);
      ops::dropout_backward(dx.cpu, dy.cpu, keep.cpu, p);
      ops::dropout_backward(dx.gpu, dy.gpu, keep.gpu, p);
      EXPECT_TRUE(dx.matches());
    }
}

TEST_F(GpuAttention, KeyedDropoutMasksEqualTheCpuBitForBit) {
  Rand rng(3103);
  const depbloom::RngKey key{0xfeedbeef12345ULL,
                             static_cast<uint32_t>(depbloom::RngPurpose::dropout) + 4, 2};
  for (Shape s : {Shape(1, 1), Shape(7, 33), Shape(257, 100)}) {
    SCOPED_TRACE(s.str());
    const int64_t rows = s[0];
    Guarded<int64_t> ids_host{Shape(rows)};
    for (int64_t r = 0; r < rows; ++r) ids_host[r] = (rows - r) * 1000003 + (int64_t{1} << 35);
    Both<int64_t> ids(std::move(ids_host));
    F x(s, rng.vec(s.numel())), y = F::nan(s);
    Guarded<uint8_t> k0(s);
    U8 keep(std::move(k0));
    ops::dropout_forward(y.cpu, keep.cpu, x.cpu, 0.3, key, ops::DropoutRows(ids.cpu.view()));
    ops::dropout_forward(y.gpu, keep.gpu, x.gpu, 0.3, key, ops::DropoutRows(ids.gpu.view()));
    EXPECT_TRUE(keep.matches_bitwise());
    EXPECT_TRUE(y.matches());
  }
}

}  // namespace
}  // namespace dbtest
