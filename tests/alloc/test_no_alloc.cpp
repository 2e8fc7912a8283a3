// A warm training-step sequence of ops performs no heap allocation. This program replaces
// the global operator new/delete (every form) and malloc/calloc/realloc/aligned_alloc/
// posix_memalign/memalign/valloc (forwarding to glibc's __libc_* entry points) with
// counting versions, runs the sequence once to warm up OpenMP, OpenBLAS and the arena,
// then counts the allocations of the same sequence: it must be zero.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <ostream>
#include <string>
#include <vector>

#include "alloc/alloc_counting.h"
#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"

// ---- counting allocation functions -----------------------------------------------------

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};

namespace {
inline void note_allocation() {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) noexcept {
  note_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) noexcept {
  note_allocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) noexcept {
  note_allocation();
  return __libc_realloc(p, size);
}
void free(void* p) noexcept {
  __libc_free(p);
}
void* aligned_alloc(size_t alignment, size_t size) noexcept {
  note_allocation();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) noexcept {
  note_allocation();
  return __libc_memalign(alignment, size);
}
void* valloc(size_t size) noexcept {
  note_allocation();
  return __libc_memalign(static_cast<size_t>(sysconf(_SC_PAGESIZE)), size);
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  note_allocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr && size != 0) return ENOMEM;
  *out = p;
  return 0;
}
}

namespace {
void* counted_new(size_t size) {
  note_allocation();
  void* p = __libc_malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* counted_new_aligned(size_t size, std::align_val_t al) {
  note_allocation();
  void* p = __libc_memalign(static_cast<size_t>(al), size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) {
  return counted_new(n);
}
void* operator new[](size_t n) {
  return counted_new(n);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  note_allocation();
  return __libc_malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  note_allocation();
  return __libc_malloc(n == 0 ? 1 : n);
}
void* operator new(size_t n, std::align_val_t al) {
  return counted_new_aligned(n, al);
}
void* operator new[](size_t n, std::align_val_t al) {
  return counted_new_aligned(n, al);
}
void* operator new(size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  note_allocation();
  return __libc_memalign(static_cast<size_t>(al), n == 0 ? 1 : n);
}
void* operator new[](size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  note_allocation();
  return __libc_memalign(static_cast<size_t>(al), n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept {
  __libc_free(p);
}
void operator delete[](void* p) noexcept {
  __libc_free(p);
}
void operator delete(void* p, size_t) noexcept {
  __libc_free(p);
}
void operator delete[](void* p, size_t) noexcept {
  __libc_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  __libc_free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  __libc_free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  __libc_free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  __libc_free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  __libc_free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  __libc_free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  __libc_free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  __libc_free(p);
}

// ---- the step -------------------------------------------------------------------------

namespace {

using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;
using depbloom::Tensor;
namespace ops = depbloom::ops;

constexpr int64_t B = 64, IN = 48, H = 32, K = 10, HEADS = 2, W = 32, TD = 16, N = 100;

// Every tensor of the step, allocated before anything is counted.
struct Step {
  std::vector<OwnedTensor> owned;
  Tensor add(DType t, Shape s) {
    owned.emplace_back(t, s);
    return owned.back().view();
  }
  uint32_t state = 12345;
  void randomise(const Tensor& t, float lo, float hi) {
    auto* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      p[i] = lo + (hi - lo) * static_cast<float>(state >> 8) / 16777216.0f;
    }
  }

  Tensor x, w_ih, b_ih, h, w_hh, b_hh, gh, dh_new, d_gx, d_gh, dh, dw_ih, db_ih;
  Tensor dt, tw, tb, dtw, dtb, dte;
  Tensor q, kv, dout, scores, dscores, table, dtable, idx, logits, targets, dlogits, loss;
  Tensor mask, keep, params, grads, m, vv, ba, bb, bc, scalar, gamma, beta, dgamma, dbeta;
  depbloom::Arena arena{depbloom::Device::cpu(), 0};

  Step() {
    owned.reserve(64);
    x = add(DType::f32, Shape(B, IN));
    w_ih = add(DType::f32, Shape(3 * H, IN));
    b_ih = add(DType::f32, Shape(3 * H));
    h = add(DType::f32, Shape(B, H));
    w_hh = add(DType::f32, Shape(3 * H, H));
    b_hh = add(DType::f32, Shape(3 * H));
    gh = add(DType::f32, Shape(B, 3 * H));
    dh_new = add(DType::f32, Shape(B, H));
    d_gx = add(DType::f32, Shape(B, 3 * H));
    d_gh = add(DType::f32, Shape(B, 3 * H));
    dh = add(DType::f32, Shape(B, H));
    dw_ih = add(DType::f32, Shape(3 * H, IN));
    db_ih = add(DType::f32, Shape(3 * H));
    dt = add(DType::f32, Shape(B * K));
    tw = add(DType::f32, Shape(TD));
    tb = add(DType::f32, Shape(TD));
    dtw = add(DType::f32, Shape(TD));
    dtb = add(DType::f32, Shape(TD));
    dte = add(DType::f32, Shape(B * K, TD));
    q = add(DType::f32, Shape(B, W));
    kv = add(DType::f32, Shape(B, K, 2 * W));
    dout = add(DType::f32, Shape(B, W));
    scores = add(DType::f32, Shape(B, K));
    dscores = add(DType::f32, Shape(B, K));
    table = add(DType::f32, Shape(N, H));
    dtable = add(DType::f32, Shape(N, H));
    idx = add(DType::i64, Shape(B));
    logits = add(DType::f32, Shape(B));
    targets = add(DType::f32, Shape(B));
    dlogits = add(DType::f32, Shape(B));
    loss = add(DType::f32, Shape(1));
    mask = add(DType::u8, Shape(B, K));
    keep = add(DType::u8, Shape(B, W));
    params = add(DType::f32, Shape(4096));
    grads = add(DType::f32, Shape(4096));
    m = add(DType::f32, Shape(4096));
    vv = add(DType::f32, Shape(4096));
    ba = add(DType::f32, Shape(3, 7, 33));
    bb = add(DType::f32, Shape(3, 33, 5));
    bc = add(DType::f32, Shape(3, 7, 5));
    scalar = add(DType::f32, Shape(1));
    gamma = add(DType::f32, Shape(W));
    beta = add(DType::f32, Shape(W));
    dgamma = add(DType::f32, Shape(W));
    dbeta = add(DType::f32, Shape(W));
    for (const auto& t : owned)
      if (t.dtype() == DType::f32) randomise(t, -1.0f, 1.0f);
    randomise(dt, 0.0f, 5.0f);
    for (int64_t i = 0; i < B; ++i) {
      idx.data<int64_t>()[i] = (i * 37) % N - (i % 9 == 0 ? N : 0);  // some -1..-N padding
      if (idx.data<int64_t>()[i] < 0) idx.data<int64_t>()[i] = -1;
      targets.data<float>()[i] = static_cast<float>(i % 2);
    }
    for (int64_t i = 0; i < B * K; ++i) mask.data<uint8_t>()[i] = (i % 7 != 3 && i / K != 5);
    ops::fill(m, 0.0);
    ops::fill(vv, 0.0);
  }

  // One forward/backward/update pass over the ops; activations come from the arena.
  void run(int64_t step) {
    using ops::Trans;
    Tensor gx = arena.alloc(DType::f32, Shape(B, 3 * H));
    Tensor h_new = arena.alloc(DType::f32, Shape(B, H));
    Tensor gates = arena.alloc(DType::f32, Shape(B, 4 * H));
    ops::gemm(gx, x, Trans::N, w_ih, Trans::T);
    ops::bias_add(gx, b_ih);
    ops::gemm(gh, h, Trans::N, w_hh, Trans::T);
    ops::bias_add(gh, b_hh);
    ops::gru_cell_forward(h_new, gates, gx, gh, h);
    ops::gru_cell_backward(d_gx, d_gh, dh, dh_new, gates, h);
    ops::gemm(dw_ih, d_gx, Trans::T, x, Trans::N, 1.0, 1.0);
    ops::bias_grad(db_ih, d_gx);
    Tensor r_new = arena.alloc(DType::f32, Shape(B, H));
    ops::rnn_cell_forward(r_new, gx.reshape(Shape(3 * B, H)).rows(0, B), h);
    ops::rnn_cell_backward(dh, dh_new, r_new);

    Tensor te = arena.alloc(DType::f32, Shape(B * K, TD));
    ops::time_encode_forward(te, dt, tw, tb);
    ops::time_encode_backward(dtw, dtb, dte, dt, tw, tb);
    ops::time_encode_backward(dtw, dtb, dte, Tensor{}, tw, tb);  // zero deltas
    Tensor te_cat = arena.alloc(DType::f32, Shape(B * K, 1 + TD));
    ops::concat_cols_time_encode(te_cat, {dt}, dt, tw, tb);
    ops::concat_cols_time_encode(te_cat, {dt}, Tensor{}, tw, tb);
    Tensor probs = arena.alloc(DType::f32, Shape(B, K));
    ops::masked_softmax_forward(probs, scores, mask);
    Tensor dprobs = arena.alloc(DType::f32, Shape(B, K));
    ops::masked_softmax_backward(dprobs, dscores, probs);

    Tensor out = arena.alloc(DType::f32, Shape(B, W));
    Tensor attn = arena.alloc(DType::f32, Shape(B, HEADS, K));
    ops::attention_forward(out, attn, q, kv, mask, HEADS, 0.25, 0.2);
    Tensor dq = arena.alloc(DType::f32, Shape(B, W));
    Tensor dkv = arena.alloc(DType::f32, Shape(B, K, 2 * W));
    ops::attention_backward(dq, dkv, dout, attn, q, kv, mask, HEADS, 0.25, 0.2);

    Tensor y = arena.alloc(DType::f32, Shape(B, W));
    Tensor mean = arena.alloc(DType::f32, Shape(B));
    Tensor rstd = arena.alloc(DType::f32, Shape(B));
    ops::layer_norm_forward(y, mean, rstd, out, gamma, beta);
    ops::layer_norm_backward(dq, dgamma, dbeta, dout, out, mean, rstd, gamma);
    Tensor yd = arena.alloc(DType::f32, Shape(B, W));
    ops::dropout_forward(yd, keep, y, 0.1,
                         {7, static_cast<uint32_t>(depbloom::RngPurpose::dropout), 0},
                         static_cast<uint64_t>(step) * B);
    ops::dropout_backward(dq, dout, keep, 0.1);

    Tensor rows = arena.alloc(DType::f32, Shape(B, H));
    ops::gather_rows(rows, table, idx);
    ops::scatter_add_rows(dtable, rows, idx, true);
    ops::scatter_sum_rows(dtable, rows, idx);
    Tensor cat = arena.alloc(DType::f32, Shape(B, H + W + 1));
    ops::concat_cols(cat, {rows, yd, logits});
    ops::split_cols({rows, yd, logits}, cat);
    ops::act_forward(ops::Act::relu, cat, cat);  // in place, as documented
    Tensor dcat = arena.alloc(DType::f32, Shape(B, H + W + 1));
    ops::fill(dcat, 1.0);
    ops::act_backward(ops::Act::relu, dcat, dcat, cat);
    Tensor pair = arena.alloc(DType::f32, Shape(2 * B, H));
    ops::gather_cols(pair.reshape(Shape(B, 2 * H)), {{table, idx}, {table, idx}});
    ops::copy_rows({{rows, table}, {rows, table}}, Tensor{}, idx);
    ops::copy_rows({{table, rows}}, idx, Tensor{});
    ops::add_blocks_relu_forward(pair, rows);
    Tensor dpair = arena.alloc(DType::f32, Shape(2 * B, H));
    ops::fill(dpair, 1.0);
    ops::add_blocks_relu_backward(rows, dpair, pair);

    ops::bce_with_logits_forward(loss, logits, targets);
    ops::bce_with_logits_backward(dlogits, logits, targets, 1.0 / B);
    ops::bce_with_logits_loss_and_grad(loss, dlogits, logits, targets, 1.0 / B);
    ops::gemm_batched(bc, ba, Trans::N, bb, Trans::N);

    ops::sum_squares(scalar, grads);
    ops::sum(scalar, grads);
    ops::scale(grads, 0.5);
    ops::axpy(grads, 0.1, params);
    ops::sub(grads, grads, params);
    ops::adam_step(params, grads, m, vv, ops::AdamConfig{}, step);
    ops::copy(dh_new, dh);
    ops::fill(dtable, 0.0);
    arena.reset();
  }
};

TEST(NoAllocation, WarmStepAllocatesNothing) {
  Step s;
  s.run(1);  // warm-up: thread pools, BLAS buffers, the arena's block
  s.run(2);
  const int64_t arena_chunks = s.arena.system_allocations();
  g_allocations = 0;
  g_counting = true;
  s.run(3);
  s.run(4);
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0) << "heap allocations in two warm steps";
  EXPECT_EQ(s.arena.system_allocations(), arena_chunks) << "the arena grew in a warm step";
}

// The counter itself works (so a zero above means something).
TEST(NoAllocation, CounterSeesAllocations) {
  g_allocations = 0;
  g_counting = true;
  auto* p = new std::vector<int>(100);
  void* q = std::malloc(10);
  g_counting = false;
  std::free(q);
  delete p;
  EXPECT_GE(g_allocations.load(), 3);
}

}  // namespace
