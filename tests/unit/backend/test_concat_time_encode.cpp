// Op tests for concat_cols_time_encode (a layer's input parts and its time encoding in one
// pass) and time_encode_backward with zero deltas (dt = Tensor{}): against plain double loops
// with guard elements, and bit for bit against the ops they replace (concat_cols after
// time_encode_forward, and an explicit tensor of zeros).
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct ConcatTimeCase {
  int64_t rows, first, second, dims;  // part widths; 0 = no such part, -1 = a [R] part
  bool zero_dt;
  DType dtype;
  std::string label() const {
    auto w = [](int64_t x) { return x < 0 ? std::string("v") : std::to_string(x); };
    return "R" + std::to_string(rows) + "_" + w(first) + "_" + w(second) + "_D" +
           std::to_string(dims) + (zero_dt ? "_zero_" : "_") + dtype_label(dtype);
  }
};
void PrintTo(const ConcatTimeCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
struct Inputs {
  std::vector<Guarded<T>> parts;
  std::vector<int64_t> widths;
  Guarded<T> dt, w, b;
  int64_t total = 0;
  Inputs(const ConcatTimeCase& c, Rand& rng)
      : dt(Shape(c.rows), rng.vec(c.rows, 0.0, 10.0, 0.01)),
        w(Shape(c.dims), rng.vec(c.dims)),
        b(Shape(c.dims), rng.vec(c.dims)) {
    for (int64_t width : {c.first, c.second}) {
      if (width == 0) continue;
      const Shape s = width < 0 ? Shape(c.rows) : Shape(c.rows, width);
      parts.emplace_back(s, rng.vec(s.numel()));
      widths.push_back(width < 0 ? 1 : width);
      total += widths.back();
    }
    total += c.dims;
  }
  // The op's call with this case's parts (none, one or two).
  void run(const Tensor& out, const Tensor& deltas) const {
    if (parts.empty())
      ops::concat_cols_time_encode(out, {}, deltas, w, b);
    else if (parts.size() == 1)
      ops::concat_cols_time_encode(out, {parts[0]}, deltas, w, b);
    else
      ops::concat_cols_time_encode(out, {parts[0], parts[1]}, deltas, w, b);
  }
};

template <class T>
void check_reference(const ConcatTimeCase& c) {
  Rand rng(1300 + static_cast<uint64_t>(c.rows + c.dims));
  const Inputs<T> in(c, rng);
  Guarded<T> out(Shape(c.rows, in.total));
  out.fill_nan();
  in.run(out, c.zero_dt ? Tensor{} : in.dt.view());
  std::vector<double> ref(static_cast<size_t>(c.rows * in.total));
  const auto wv = in.w.values(), bv = in.b.values(), dtv = in.dt.values();
  for (int64_t r = 0; r < c.rows; ++r) {
    int64_t col = 0;
    for (size_t p = 0; p < in.parts.size(); ++p)
      for (int64_t j = 0; j < in.widths[p]; ++j)
        ref[r * in.total + col++] = in.parts[p][r * in.widths[p] + j];
    const double t = c.zero_dt ? 0.0 : dtv[r];
    for (int64_t d = 0; d < c.dims; ++d) ref[r * in.total + col++] = std::cos(t * wv[d] + bv[d]);
  }
  EXPECT_TRUE(all_close(out.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(out.guard_intact());
}

template <class T>
void check_chain(const ConcatTimeCase& c) {
  Rand rng(1350);
  const Inputs<T> in(c, rng);
  Guarded<T> zeros(Shape(c.rows));
  zeros.fill(0.0);
  const Tensor deltas = c.zero_dt ? zeros.view() : in.dt.view();
  Guarded<T> fused(Shape(c.rows, in.total)), te(Shape(c.rows, c.dims)), chain(fused.shape());
  in.run(fused, c.zero_dt ? Tensor{} : in.dt.view());
  ops::time_encode_forward(te, deltas, in.w, in.b);
  if (in.parts.empty())
    ops::concat_cols(chain, {te});
  else if (in.parts.size() == 1)
    ops::concat_cols(chain, {in.parts[0], te});
  else
    ops::concat_cols(chain, {in.parts[0], in.parts[1], te});
  EXPECT_TRUE(bitwise_equal(fused.values(), chain.values()));

  // The backward with Tensor{} for zero deltas gives what an explicit tensor of zeros does.
  Guarded<T> dout(Shape(c.rows, c.dims), rng.vec(c.rows * c.dims));
  const auto start = rng.vec(c.dims);
  Guarded<T> dw(Shape(c.dims), start), db(Shape(c.dims), start);
  Guarded<T> dw_zeros(Shape(c.dims), start), db_zeros(Shape(c.dims), start);
  ops::time_encode_backward(dw, db, dout, c.zero_dt ? Tensor{} : in.dt.view(), in.w, in.b);
  ops::time_encode_backward(dw_zeros, db_zeros, dout, deltas, in.w, in.b);
  EXPECT_TRUE(bitwise_equal(dw.values(), dw_zeros.values())) << "dw";
  EXPECT_TRUE(bitwise_equal(db.values(), db_zeros.values())) << "db";

  // dt over the first half of the rows: the rest count as zero deltas, as explicit zeros do.
  const int64_t half = c.rows / 2;
  std::vector<double> padded = in.dt.values();
  for (int64_t r = half; r < c.rows; ++r) padded[static_cast<size_t>(r)] = 0.0;
  Guarded<T> dt_padded(Shape(c.rows), padded);
  Guarded<T> dw_short(Shape(c.dims), start), db_short(Shape(c.dims), start);
  Guarded<T> dw_padded(Shape(c.dims), start), db_padded(Shape(c.dims), start);
  ops::time_encode_backward(dw_short, db_short, dout, in.dt.view().rows(0, half), in.w, in.b);
  ops::time_encode_backward(dw_padded, db_padded, dout, dt_padded, in.w, in.b);
  EXPECT_TRUE(bitwise_equal(dw_short.values(), dw_padded.values())) << "dw, dt ending early";
  EXPECT_TRUE(bitwise_equal(db_short.values(), db_padded.values())) << "db, dt ending early";
}

class ConcatTimeEncode : public testing::TestWithParam<ConcatTimeCase> {};
TEST_P(ConcatTimeEncode, MatchesPlainLoops) {
  if (GetParam().dtype == DType::f32)
    check_reference<float>(GetParam());
  else
    check_reference<double>(GetParam());
}
TEST_P(ConcatTimeEncode, EqualsTimeEncodeThenConcatBitForBit) {
  if (GetParam().dtype == DType::f32)
    check_chain<float>(GetParam());
  else
    check_chain<double>(GetParam());
}
// TGN's query side ([h || te(0)], 100 + 100), key side ([h || e || te], 100 + 172 + 100) and
// memory input; a [R] part; no part at all; sizes around the parallel threshold.
const ConcatTimeCase kConcatTimeCases[] = {
    {1, 1, 0, 1, false, DType::f32},         {7, 100, 0, 100, true, DType::f32},
    {257, 100, 172, 100, false, DType::f32}, {33, -1, 7, 33, false, DType::f64},
    {100, 0, 0, 7, false, DType::f32},       {600, 272, 0, 100, true, DType::f64},
    {3000, 100, 0, 100, false, DType::f32}};
INSTANTIATE_TEST_SUITE_P(Ops, ConcatTimeEncode, testing::ValuesIn(kConcatTimeCases),
                         [](const auto& info) { return info.param.label(); });

TEST(ConcatTimeEncodeErrors, NamesWhatIsWrong) {
  Guarded<float> out(Shape(4, 6)), whole(Shape(4, 6)), half(Shape(4, 3)), dt(Shape(3));
  Guarded<float> w(Shape(3)), b(Shape(3)), p(Shape(4, 1)), wide(Shape(4, 12));
  // The part takes every column: none are left for the encoding.
  EXPECT_THROW(ops::concat_cols_time_encode(out, {whole}, Tensor{}, w, b), depbloom::Error);
  // dt's rows differ from out's.
  EXPECT_THROW(ops::concat_cols_time_encode(out, {half}, dt, w, b), depbloom::Error);
  // Nine parts: more than one launch takes.
  EXPECT_THROW(ops::concat_cols_time_encode(wide, {p, p, p, p, p, p, p, p, p}, Tensor{}, w, b),
               depbloom::Error);
}

}  // namespace
}  // namespace dbtest
