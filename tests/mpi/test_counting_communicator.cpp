// The counting communicator (label unit, no mpirun): one rank of P whose collectives move
// nothing but count calls and bytes as every communicator does (all-gather-v's bytes from
// its counts), and whose all-gathers return what the caller said every rank sends.
// tests/mpi/test_depbloom_training.cpp checks that a forecast made with it equals what an
// MPI run counts, for strict and depbloom.
#include <gtest/gtest.h>

#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/dist/counting_communicator.h"

namespace depbloom::dist {
namespace {

TEST(CountingCommunicator, CountsWhatPRanksWouldGather) {
  CountingCommunicator c(1, 3);
  EXPECT_EQ(c.rank(), 1);
  EXPECT_EQ(c.size(), 3);
  std::vector<float> grads(10, 1.0f);
  c.all_reduce(Tensor::wrap(grads.data(), Shape(10)));
  c.iall_reduce(Tensor::wrap(grads.data(), Shape(10))).wait();
  EXPECT_EQ(grads, std::vector<float>(10, 1.0f));  // nothing reduced
  std::vector<double> mine = {4, 5}, all(6, 0.0);
  c.answer_gathers({1, 2, 4, 5, 7, 8});
  c.all_gather(Tensor::wrap(mine.data(), Shape(2)), Tensor::wrap(all.data(), Shape(6)));
  EXPECT_EQ(all, (std::vector<double>{1, 2, 4, 5, 7, 8}));
  std::vector<int32_t> send(2), recv(9);
  c.all_gather_v(Tensor::wrap(send.data(), Shape(2)), Tensor::wrap(recv.data(), Shape(9)),
                 {3, 2, 4});
  const CommStats& s = c.stats();
  EXPECT_EQ(s[CollectiveKind::all_reduce].calls, 2);
  EXPECT_EQ(s[CollectiveKind::all_reduce].nonblocking, 1);
  EXPECT_EQ(s[CollectiveKind::all_reduce].bytes, 80);
  EXPECT_EQ(s[CollectiveKind::all_gather].bytes, 48);
  EXPECT_EQ(s[CollectiveKind::all_gather_v].calls, 1);
  EXPECT_EQ(s[CollectiveKind::all_gather_v].bytes, 36);
}

TEST(CountingCommunicator, AnUnansweredGatherOrAnAbortIsAnError) {
  CountingCommunicator c(0, 2);
  std::vector<double> mine = {1}, all(2);
  EXPECT_THROW(
      c.all_gather(Tensor::wrap(mine.data(), Shape(1)), Tensor::wrap(all.data(), Shape(2))), Error);
  EXPECT_THROW(c.abort(3, "stop"), Error);
}

}  // namespace
}  // namespace depbloom::dist
