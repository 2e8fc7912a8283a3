// The op counters (backend/op_counts.h): a known sequence of op calls gives its counts per
// kind and its uploads (a table of sequences), a failed check counts nothing, a dry run
// (OpCountOnly) counts without computing, and a thread in the side lane counts apart.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "depbloom/backend/op_counts.h"
#include "depbloom/backend/ops.h"
#include "depbloom/backend/upload.h"
#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"

namespace dbtest {
namespace {

using depbloom::Arena;
using depbloom::Device;
using depbloom::DType;
using depbloom::OwnedTensor;
using depbloom::Shape;
using depbloom::Tensor;
using depbloom::backend::OpCounts;
using depbloom::backend::OpKind;
namespace ops = depbloom::ops;

// Small f32 operands on the CPU, shared by the sequences.
struct Operands {
  OwnedTensor a = OwnedTensor::zeros(DType::f32, Shape(4, 3));
  OwnedTensor b = OwnedTensor::zeros(DType::f32, Shape(3, 5));
  OwnedTensor c = OwnedTensor::zeros(DType::f32, Shape(4, 5));
  OwnedTensor bias = OwnedTensor::zeros(DType::f32, Shape(5));
  OwnedTensor wide = OwnedTensor::zeros(DType::f32, Shape(4, 8));
  OwnedTensor idx = OwnedTensor::zeros(DType::i64, Shape(4));
  OwnedTensor one = OwnedTensor::zeros(DType::f32, Shape(1));
  Arena arena{Device::cpu(), 1 << 12};
};

struct Sequence {
  const char* name;
  std::function<void(Operands&)> run;
  std::map<OpKind, int64_t> calls;  // every kind not named: 0
  int64_t uploads;
};

const std::vector<Sequence>& sequences() {
  static const std::vector<Sequence> table = {
      {"nothing", [](Operands&) {}, {}, 0},
      {"linear layer",
       [](Operands& o) {
         ops::gemm(o.c, o.a, ops::Trans::N, o.b, ops::Trans::N);
         ops::bias_add(o.c, o.bias);
         ops::act_forward(ops::Act::relu, o.c, o.c);
       },
       {{OpKind::gemm, 1}, {OpKind::bias_add, 1}, {OpKind::act_forward, 1}},
       0},
      {"repeated kinds",
       [](Operands& o) {
         for (int i = 0; i < 3; ++i) ops::fill(o.c, 1.0);
         ops::scale(o.c, 2.0);
         ops::axpy(o.c, 0.5, o.c);
         ops::sum(o.one, o.c);
         ops::copy(o.a, o.a);
       },
       {{OpKind::fill, 3},
        {OpKind::scale, 1},
        {OpKind::axpy, 1},
        {OpKind::sum, 1},
        {OpKind::copy, 1}},
       0},
      {"rows and columns, uploaded index",
       [](Operands& o) {
         const Tensor idx = depbloom::upload(o.arena, o.idx.view());
         ops::gather_rows(o.c, o.c, idx);
         ops::scatter_add_rows(o.c, o.c, idx);
         ops::concat_cols(o.wide, {o.a.view(), o.c.view()});
         ops::split_cols({o.a.view(), o.c.view()}, o.wide);
       },
       {{OpKind::gather_rows, 1},
        {OpKind::scatter_add_rows, 1},
        {OpKind::concat_cols, 1},
        {OpKind::split_cols, 1}},
       1},
  };
  return table;
}

class OpCountsTable : public ::testing::TestWithParam<size_t> {};

TEST_P(OpCountsTable, CountsEachCallOnceByKind) {
  const Sequence& s = sequences()[GetParam()];
  Operands o;
  const OpCounts before = depbloom::backend::op_counts();
  s.run(o);
  const OpCounts spent = depbloom::backend::op_counts() - before;
  int64_t total = 0;
  for (size_t k = 0; k < depbloom::backend::kOpKinds; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const auto want = s.calls.find(kind);
    const int64_t expected = want == s.calls.end() ? 0 : want->second;
    EXPECT_EQ(spent[kind], expected) << s.name << ": " << depbloom::backend::op_kind_name(kind);
    total += expected;
  }
  EXPECT_EQ(spent.total_calls(), total) << s.name;
  EXPECT_EQ(spent.uploads, s.uploads) << s.name;
}

INSTANTIATE_TEST_SUITE_P(Sequences, OpCountsTable, ::testing::Range<size_t>(0, 4),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name = sequences()[info.param].name;
                           for (char& ch : name)
                             if (ch == ' ' || ch == ',') ch = '_';
                           return name;
                         });

TEST(OpCounts, NamesFollowTheKinds) {
  EXPECT_STREQ(depbloom::backend::op_kind_name(OpKind::gemm), "gemm");
  EXPECT_STREQ(depbloom::backend::op_kind_name(OpKind::gather_rows), "gather_rows");
  EXPECT_STREQ(depbloom::backend::op_kind_name(OpKind::sum_squares), "sum_squares");
  EXPECT_EQ(static_cast<size_t>(OpKind::sum_squares) + 1, depbloom::backend::kOpKinds);
}

TEST(OpCounts, ACallThatFailsItsCheckCountsNothing) {
  Operands o;
  const OpCounts before = depbloom::backend::op_counts();
  EXPECT_THROW(ops::gemm(o.c, o.b, ops::Trans::N, o.b, ops::Trans::N), depbloom::Error);
  EXPECT_EQ((depbloom::backend::op_counts() - before).total_calls(), 0);
}

TEST(OpCounts, ADryRunCountsButComputesNothing) {
  Operands o;
  ops::fill(o.c, 3.0);
  const OpCounts before = depbloom::backend::op_counts();
  {
    depbloom::backend::OpCountOnly dry;
    EXPECT_TRUE(depbloom::backend::ops_count_only());
    ops::fill(o.c, 1.0);
    ops::scale(o.c, 2.0);
    EXPECT_THROW(depbloom::backend::OpCountOnly again, depbloom::Error);
  }
  EXPECT_FALSE(depbloom::backend::ops_count_only());
  const OpCounts spent = depbloom::backend::op_counts() - before;
  EXPECT_EQ(spent[OpKind::fill], 1);
  EXPECT_EQ(spent[OpKind::scale], 1);
  for (int64_t i = 0; i < o.c.numel(); ++i) EXPECT_EQ(o.c.data<float>()[i], 3.0f);
}

TEST(OpCounts, TheSideLaneCountsApart) {
  using depbloom::backend::OpLane;
  Operands o;
  const OpCounts step_before = depbloom::backend::op_counts(OpLane::step);
  const OpCounts side_before = depbloom::backend::op_counts(OpLane::side);
  std::thread side([&o] {
    depbloom::backend::set_thread_op_lane(OpLane::side);
    ops::fill(o.c, 1.0);
    ops::fill(o.c, 2.0);
    depbloom::upload(o.arena, o.idx.view());
  });
  side.join();
  ops::fill(o.a, 1.0);
  const OpCounts step = depbloom::backend::op_counts(OpLane::step) - step_before;
  const OpCounts on_side = depbloom::backend::op_counts(OpLane::side) - side_before;
  EXPECT_EQ(step[OpKind::fill], 1);
  EXPECT_EQ(step.uploads, 0);
  EXPECT_EQ(on_side[OpKind::fill], 2);
  EXPECT_EQ(on_side.uploads, 1);
}

}  // namespace
}  // namespace dbtest
