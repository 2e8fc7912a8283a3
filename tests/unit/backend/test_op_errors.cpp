// The ops' entry checks: a shape mismatch throws depbloom::Error naming the shapes
// involved, a dtype mismatch or wrong index/mask dtype throws, and tensors on two devices
// throw. Every case runs on the CPU; nothing here needs a GPU.
#include <gtest/gtest.h>

#include <functional>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using ops::Trans;

// Host storage large enough for every view below; the checks must fire before any access.
std::vector<double>& scratch() {
  static std::vector<double> s(4096, 1.0);
  return s;
}
Tensor f32(Shape s) {
  return Tensor(scratch().data(), DType::f32, s);
}
Tensor f64(Shape s) {
  return Tensor(scratch().data() + 1024, DType::f64, s);
}
Tensor u8(Shape s) {
  return Tensor(scratch().data() + 2048, DType::u8, s);
}
Tensor i64(Shape s) {
  return Tensor(scratch().data() + 3072, DType::i64, s);
}

struct ShapeErrorCase {
  const char* name;
  std::function<void()> call;
  std::vector<std::string> all_of;  // every one of these shapes must be named
  std::vector<std::string> any_of;  // and at least one of these (empty: no requirement)
};
void PrintTo(const ShapeErrorCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<ShapeErrorCase> shape_cases() {
  using S = Shape;
  return {
      {"gemm_inner",
       [] { ops::gemm(f32(S(3, 4)), f32(S(3, 4)), Trans::N, f32(S(5, 4)), Trans::N); },
       {"[3, 4]", "[5, 4]"},
       {}},
      {"gemm_output",
       [] { ops::gemm(f32(S(3, 5)), f32(S(3, 4)), Trans::N, f32(S(4, 6)), Trans::N); },
       {"[3, 5]"},
       {"[3, 4]", "[4, 6]"}},
      {"gemm_batched",
       [] {
         ops::gemm_batched(f32(S(2, 3, 3)), f32(S(2, 3, 4)), Trans::N, f32(S(3, 4, 3)), Trans::N);
       },
       {"[2, 3, 4]", "[3, 4, 3]"},
       {}},
      {"gemm_bias",
       [] {
         ops::gemm_bias(f32(S(3, 4)), f32(S(3, 2)), Trans::N, f32(S(2, 4)), Trans::N, f32(S(5)));
       },
       {"[3, 4]", "[5]"},
       {}},
      {"affine_grad_inner",
       [] { ops::affine_grad(f32(S(4, 2)), f32(S(4)), f32(S(3, 4)), f32(S(5, 2))); },
       {"[3, 4]", "[5, 2]"},
       {}},
      {"affine_grad_bias",
       [] { ops::affine_grad(f32(S(4, 2)), f32(S(3)), f32(S(3, 4)), f32(S(3, 2))); },
       {"[3]", "[4, 2]"},
       {}},
      {"bias_add", [] { ops::bias_add(f32(S(3, 4)), f32(S(5))); }, {"[3, 4]", "[5]"}, {}},
      {"bias_grad", [] { ops::bias_grad(f32(S(5)), f32(S(3, 4))); }, {"[3, 4]", "[5]"}, {}},
      {"act_forward",
       [] { ops::act_forward(ops::Act::tanh, f32(S(3, 4)), f32(S(4, 3))); },
       {"[3, 4]", "[4, 3]"},
       {}},
      {"act_backward",
       [] { ops::act_backward(ops::Act::tanh, f32(S(3, 4)), f32(S(3, 4)), f32(S(3, 5))); },
       {"[3, 5]", "[3, 4]"},
       {}},
      {"add_blocks_relu_forward",
       [] { ops::add_blocks_relu_forward(f32(S(7, 4)), f32(S(3, 4))); },
       {"[7, 4]", "[3, 4]"},
       {}},
      {"add_blocks_relu_backward",
       [] { ops::add_blocks_relu_backward(f32(S(3, 5)), f32(S(6, 4)), f32(S(6, 4))); },
       {"[6, 4]", "[3, 5]"},
       {}},
      {"gru_forward",
       [] {
         ops::gru_cell_forward(f32(S(2, 3)), f32(S(2, 12)), f32(S(2, 9)), f32(S(2, 9)),
                               f32(S(2, 4)));
       },
       {"[2, 4]"},
       {"[2, 3]", "[2, 9]", "[2, 12]"}},
      {"gru_backward",
       [] {
         ops::gru_cell_backward(f32(S(2, 9)), f32(S(2, 9)), f32(S(2, 3)), f32(S(2, 3)),
                                f32(S(2, 8)), f32(S(2, 3)));
       },
       {"[2, 8]"},
       {"[2, 3]", "[2, 9]"}},
      {"rnn_forward",
       [] { ops::rnn_cell_forward(f32(S(2, 3)), f32(S(2, 4)), f32(S(2, 3))); },
       {"[2, 3]", "[2, 4]"},
       {}},
      {"time_encode",
       [] { ops::time_encode_forward(f32(S(3, 4)), f32(S(3)), f32(S(5)), f32(S(4))); },
       {"[5]"},
       {"[3, 4]", "[4]"}},
      {"time_encode_backward_dt_too_long",
       [] {
         ops::time_encode_backward(f32(S(4)), f32(S(4)), f32(S(3, 4)), f32(S(5)), f32(S(4)),
                                   f32(S(4)));
       },
       {"[5]", "[3, 4]"},
       {}},
      {"softmax_mask",
       [] { ops::masked_softmax_forward(f32(S(3, 4)), f32(S(3, 4)), u8(S(3, 5))); },
       {"[3, 5]", "[3, 4]"},
       {}},
      {"attention_kv",
       [] {
         ops::attention_forward(f32(S(2, 6)), f32(S(2, 2, 3)), f32(S(2, 6)), f32(S(2, 3, 6)),
                                u8(S(2, 3)), 2, 1.0, 0.2);
       },
       {"[2, 3, 6]", "[2, 3, 12]"},
       {}},
      {"layer_norm_gamma",
       [] {
         ops::layer_norm_forward(f32(S(3, 4)), f32(S(3)), f32(S(3)), f32(S(3, 4)), f32(S(5)),
                                 f32(S(4)));
       },
       {"[5]"},
       {"[3, 4]", "[4]"}},
      {"dropout",
       [] { ops::dropout_forward(f32(S(3, 4)), u8(S(3, 4)), f32(S(3, 5)), 0.5, {}, 0); },
       {"[3, 5]"},
       {"[3, 4]"}},
      {"gather_width",
       [] { ops::gather_rows(f32(S(2, 3)), f32(S(5, 4)), i64(S(2))); },
       {"[2, 3]", "[5, 4]"},
       {}},
      {"scatter_width",
       [] { ops::scatter_add_rows(f32(S(5, 3)), f32(S(2, 4)), i64(S(2))); },
       {"[5, 3]", "[2, 4]"},
       {}},
      {"scatter_rows_width",
       [] { ops::scatter_rows(f32(S(5, 3)), f32(S(2, 4)), i64(S(2))); },
       {"[5, 3]", "[2, 4]"},
       {}},
      {"scatter_rows_count",
       [] { ops::scatter_rows(f32(S(5, 3)), f32(S(3, 3)), i64(S(2))); },
       {"[3, 3]"},
       {"[2]"}},
      {"concat_width",
       [] {
         ops::concat_cols(f32(S(3, 5)), {f32(S(3, 2)), f32(S(3, 2))});
       },
       {"[3, 5]"},
       {"[3, 2]"}},
      {"split_rows",
       [] {
         ops::split_cols({f32(S(3, 2)), f32(S(4, 2))}, f32(S(3, 4)));
       },
       {"[4, 2]"},
       {"[3, 4]", "[3, 2]"}},
      {"bce",
       [] { ops::bce_with_logits_forward(f32(S(1)), f32(S(4)), f32(S(5))); },
       {"[4]", "[5]"},
       {}},
      {"bce_loss_and_grad",
       [] { ops::bce_with_logits_loss_and_grad(f32(S(1)), f32(S(3)), f32(S(4)), f32(S(4)), 1.0); },
       {"[3]", "[4]"},
       {}},
      {"adam",
       [] { ops::adam_step(f32(S(4)), f32(S(5)), f32(S(4)), f32(S(4)), {}, 1); },
       {"[4]", "[5]"},
       {}},
      {"axpy", [] { ops::axpy(f32(S(4)), 1.0, f32(S(5))); }, {"[4]", "[5]"}, {}},
      {"copy", [] { ops::copy(f32(S(4)), f32(S(5))); }, {"[4]", "[5]"}, {}},
  };
}

class ShapeMismatch : public testing::TestWithParam<ShapeErrorCase> {};
TEST_P(ShapeMismatch, ThrowsNamingTheShapes) {
  const auto& c = GetParam();
  try {
    c.call();
    FAIL() << c.name << ": no exception";
  } catch (const depbloom::Error& e) {
    std::string what = e.what();
    for (const auto& s : c.all_of)
      EXPECT_NE(what.find(s), std::string::npos) << s << " in: " << what;
    bool any = c.any_of.empty();
    for (const auto& s : c.any_of) any = any || what.find(s) != std::string::npos;
    EXPECT_TRUE(any) << "none of the related shapes in: " << what;
  }
}
struct NameOf {
  std::string operator()(const testing::TestParamInfo<ShapeErrorCase>& i) const {
    return i.param.name;
  }
};
INSTANTIATE_TEST_SUITE_P(Ops, ShapeMismatch, testing::ValuesIn(shape_cases()), NameOf());

TEST(DTypeMismatch, Throws) {
  using S = Shape;
  EXPECT_THROW(ops::gemm(f32(S(2, 2)), f64(S(2, 2)), Trans::N, f32(S(2, 2)), Trans::N),
               depbloom::Error);
  EXPECT_THROW(ops::bias_add(f32(S(2, 3)), f64(S(3))), depbloom::Error);
  EXPECT_THROW(ops::act_forward(ops::Act::relu, f64(S(4)), f32(S(4))), depbloom::Error);
  EXPECT_THROW(ops::axpy(f64(S(4)), 1.0, f32(S(4))), depbloom::Error);
  EXPECT_THROW(ops::copy(f64(S(4)), f32(S(4))), depbloom::Error);
  EXPECT_THROW(ops::layer_norm_forward(f32(S(2, 3)), f32(S(2)), f32(S(2)), f32(S(2, 3)), f64(S(3)),
                                       f32(S(3))),
               depbloom::Error);
  // Integer data where floating point is required, float where an index or mask is.
  EXPECT_THROW(ops::act_forward(ops::Act::relu, i64(S(4)), i64(S(4))), depbloom::Error);
  EXPECT_THROW(ops::gather_rows(f32(S(2, 3)), f32(S(4, 3)), f32(S(2))), depbloom::Error);
  EXPECT_THROW(ops::scatter_add_rows(f32(S(4, 3)), f32(S(2, 3)), f64(S(2))), depbloom::Error);
  EXPECT_THROW(ops::scatter_rows(f32(S(4, 3)), f32(S(2, 3)), f32(S(2))), depbloom::Error);
  EXPECT_THROW(ops::scatter_rows(i64(S(4, 3)), i64(S(2, 3)), i64(S(2))), depbloom::Error);
  EXPECT_THROW(ops::masked_softmax_forward(f32(S(2, 3)), f32(S(2, 3)), f32(S(2, 3))),
               depbloom::Error);
  EXPECT_THROW(ops::dropout_forward(f32(S(2, 3)), f32(S(2, 3)), f32(S(2, 3)), 0.5, {}, 0),
               depbloom::Error);
}

// All tensors of one call must live on one device; checked before anything runs.
TEST(DeviceMismatch, Throws) {
  Tensor on_gpu(scratch().data(), DType::f32, Shape(2, 2), depbloom::Device::cuda(0));
  EXPECT_THROW(ops::gemm(f32(Shape(2, 2)), on_gpu, Trans::N, f32(Shape(2, 2)), Trans::N),
               depbloom::Error);
  EXPECT_THROW(ops::axpy(f32(Shape(2, 2)), 1.0, on_gpu), depbloom::Error);
  EXPECT_THROW(ops::bias_add(on_gpu, f32(Shape(2))), depbloom::Error);
}

}  // namespace
}  // namespace dbtest
