// The one-rank communicator (label unit, no mpirun): collectives are identities or copies,
// non-blocking forms complete at once, the accounting counts like the MPI one, argument
// errors and unknown kinds are reported, abort ends the process with its code, and the
// launch environment is read from mpirun's variables.
#include <cstdlib>

#include "collective_cases.h"
#include "depbloom/core/error.h"
#include "depbloom/dist/local_communicator.h"

namespace dbtest {
namespace {

using depbloom::Tensor;
using depbloom::dist::CollectiveKind;
using depbloom::dist::LocalCommunicator;

const Device kCpu = Device::cpu();

TEST(LocalCommunicator, OneRank) {
  LocalCommunicator c;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.local_rank(), 0);
  EXPECT_EQ(c.local_size(), 1);
  EXPECT_STREQ(c.name(), "local");
  EXPECT_EQ(c.device(), kCpu);
}

TEST(LocalCommunicator, CollectivesOnOneRank) {
  LocalCommunicator c;
  for (int64_t n : {0, 1, 7, 1001}) {
    EXPECT_TRUE(check_all_reduce<float>(c, kCpu, n, ReduceOp::sum));
    EXPECT_TRUE(check_all_reduce<double>(c, kCpu, n, ReduceOp::mean));
    EXPECT_TRUE(check_all_reduce<float>(c, kCpu, n, ReduceOp::mean, true));
    EXPECT_TRUE(check_all_gather<int64_t>(c, kCpu, n));
    EXPECT_TRUE(check_all_gather_v<uint8_t>(c, kCpu, {n}));
    EXPECT_TRUE(check_all_gather_v<double>(c, kCpu, {n}, true));
    EXPECT_TRUE(check_broadcast<int32_t>(c, kCpu, n, 0));
  }
  c.barrier();
  EXPECT_EQ(c.all_gather_counts(42), std::vector<int64_t>{42});
}

TEST(LocalCommunicator, StatsCountCallsAndBytes) {
  LocalCommunicator c;
  std::vector<float> g(10);
  c.all_reduce(Tensor::wrap(g.data(), Shape(10)));
  c.iall_reduce(Tensor::wrap(g.data(), Shape(5))).wait();
  std::vector<float> out(10);
  c.all_gather_v(Tensor::wrap(g.data(), Shape(10)), Tensor::wrap(out.data(), Shape(10)), {10});
  c.barrier();
  const auto& s = c.stats();
  EXPECT_EQ(s[CollectiveKind::all_reduce].calls, 2);
  EXPECT_EQ(s[CollectiveKind::all_reduce].nonblocking, 1);
  EXPECT_EQ(s[CollectiveKind::all_reduce].bytes, 60);
  EXPECT_EQ(s[CollectiveKind::all_gather_v].bytes, 40);
  EXPECT_EQ(s[CollectiveKind::barrier].calls, 1);
  EXPECT_EQ(s.total_calls(), 4);
  EXPECT_EQ(s.total_bytes(), 100);
  EXPECT_STREQ(depbloom::dist::collective_name(CollectiveKind::all_gather_v), "all_gather_v");
  c.reset_stats();
  EXPECT_EQ(c.stats().total_calls(), 0);
}

TEST(LocalCommunicator, ArgumentErrors) {
  LocalCommunicator c;
  std::vector<int64_t> ints(3);
  EXPECT_THROW(c.all_reduce(Tensor::wrap(ints.data(), Shape(3))), depbloom::Error);
  std::vector<float> f(4);
  std::vector<double> d(4);
  EXPECT_THROW(c.all_gather(Tensor::wrap(f.data(), Shape(4)), Tensor::wrap(d.data(), Shape(4))),
               depbloom::Error);
  EXPECT_THROW(
      c.all_gather_v(Tensor::wrap(f.data(), Shape(2)), Tensor::wrap(f.data(), Shape(3)), {2}),
      depbloom::Error);
  EXPECT_THROW(
      c.all_gather_v(Tensor::wrap(f.data(), Shape(2)), Tensor::wrap(f.data(), Shape(2)), {2, 0}),
      depbloom::Error);
  EXPECT_THROW(c.broadcast(Tensor::wrap(f.data(), Shape(4)), 1), depbloom::Error);
  EXPECT_EQ(c.stats().total_calls(), 0);  // rejected calls are not counted
}

TEST(LocalCommunicator, Factory) {
  EXPECT_STREQ(depbloom::dist::make_communicator("local", kCpu)->name(), "local");
  EXPECT_STREQ(depbloom::dist::make_communicator("auto", kCpu)->name(), "local");
  try {
    depbloom::dist::make_communicator("gloo", kCpu);
    ADD_FAILURE() << "no error for an unknown kind";
  } catch (const depbloom::Error& e) {
    EXPECT_EQ(e.kind(), depbloom::ErrorKind::config);
    EXPECT_NE(e.message().find("gloo"), std::string::npos) << e.message();
  }
  EXPECT_THROW(depbloom::dist::make_communicator("nccl", kCpu), depbloom::Error);
  if (!depbloom::dist::built_with_mpi()) {
    EXPECT_THROW(depbloom::dist::make_communicator("mpi", kCpu), depbloom::Error);
  }
}

TEST(LocalCommunicator, LaunchEnvironment) {
  if (depbloom::dist::launched_by_mpirun()) GTEST_SKIP() << "this test sets mpirun's variables";
  EXPECT_FALSE(depbloom::dist::launch_env().under_mpirun);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  depbloom::dist::LaunchEnv e = depbloom::dist::launch_env();
  EXPECT_TRUE(e.under_mpirun);
  EXPECT_EQ(e.size, 4);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_size, 2);
  EXPECT_EQ(depbloom::dist::auto_communicator_kind(kCpu), "mpi");
  EXPECT_THROW(depbloom::dist::make_communicator("local", kCpu), depbloom::Error);
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    unsetenv(v);
  EXPECT_FALSE(depbloom::dist::launched_by_mpirun());
}

TEST(LocalCommunicatorDeathTest, AbortExitsWithCodeAndMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(LocalCommunicator().abort(7, "bad data on this rank"), testing::ExitedWithCode(7),
              "\\[rank 0/1\\] bad data on this rank");
}

}  // namespace
}  // namespace dbtest
