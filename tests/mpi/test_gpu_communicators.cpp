// Communicators on CUDA tensors (label gpu, run by mpirun; skips without a usable GPU):
// NCCL (one GPU per rank, so it also skips when this machine has fewer GPUs than local
// ranks) and MPI staging CUDA tensors through its reused host buffers, which lets several
// ranks share one GPU.
#include <memory>

#include "collective_cases.h"
#include "depbloom/core/error.h"

namespace dbtest {
namespace {

using depbloom::DType;
using depbloom::Tensor;

class GpuComm : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!depbloom::backend::cuda_usable(&why)) GTEST_SKIP() << why;
  }
};

// One communicator of each kind per process: MPI and NCCL set up once.
Communicator& mpi_on_gpu() {
  static std::unique_ptr<Communicator> c =
      depbloom::dist::make_communicator("mpi", Device::cuda(0));
  return *c;
}

Communicator* nccl_or_skip_reason(std::string* why) {
  static std::unique_ptr<Communicator> c;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const depbloom::dist::LaunchEnv env = depbloom::dist::launch_env();
    if (!depbloom::dist::built_with_nccl()) {
      reason = "DepBloom was built without NCCL";
    } else if (depbloom::backend::cuda_device_count() < env.local_size) {
      reason = "NCCL needs one GPU per rank: " + std::to_string(env.local_size) + " local ranks, " +
               std::to_string(depbloom::backend::cuda_device_count()) +
               " GPU(s) (multi-GPU runs wait for a machine with several GPUs)";
    } else {
      c = depbloom::dist::make_communicator("nccl", Device::cuda(0));
    }
  }
  *why = reason;
  return c.get();
}

#define NCCL_OR_SKIP(var)                             \
  std::string why_;                                   \
  Communicator* var##_p = nccl_or_skip_reason(&why_); \
  if (var##_p == nullptr) GTEST_SKIP() << why_;       \
  Communicator& var = *var##_p

TEST_F(GpuComm, NcclAllReduceSumAndMean) {
  NCCL_OR_SKIP(c);
  EXPECT_STREQ(c.name(), "nccl");
  EXPECT_EQ(c.device(), Device::cuda(c.local_rank()));
  const Device d = c.device();
  for (int64_t n : {1, 7, 1001, 65537}) {
    EXPECT_TRUE(check_all_reduce<float>(c, d, n, ReduceOp::sum));
    EXPECT_TRUE(check_all_reduce<float>(c, d, n, ReduceOp::mean));
    EXPECT_TRUE(check_all_reduce<double>(c, d, n, ReduceOp::sum));
  }
}

TEST_F(GpuComm, NcclGatherBroadcastAndNonBlocking) {
  NCCL_OR_SKIP(c);
  const Device d = c.device();
  EXPECT_TRUE(check_all_gather<float>(c, d, 333));
  EXPECT_TRUE(check_all_gather<int64_t>(c, d, 5));
  EXPECT_TRUE(check_all_gather_v<float>(c, d, uneven_counts(c.size())));
  EXPECT_TRUE(check_all_gather_v<uint8_t>(c, d, uneven_counts(c.size())));
  EXPECT_TRUE(check_all_gather_v<int32_t>(c, d, std::vector<int64_t>(c.size(), 0)));
  EXPECT_TRUE(check_broadcast<float>(c, d, 1001, c.size() - 1));
  EXPECT_TRUE(check_all_reduce<float>(c, d, 4097, ReduceOp::mean, true));
  EXPECT_TRUE(check_all_gather_v<double>(c, d, uneven_counts(c.size()), true));
  // CPU tensors go over the MPI communicator the NCCL one was bootstrapped with.
  EXPECT_TRUE(check_all_reduce<double>(c, Device::cpu(), 9, ReduceOp::sum));
  EXPECT_TRUE(check_all_gather_v<int64_t>(c, Device::cpu(), uneven_counts(c.size())));
  c.barrier();
  EXPECT_EQ(c.all_gather_counts(c.rank() + 1).size(), static_cast<size_t>(c.size()));
}

TEST_F(GpuComm, NcclRejectsTensorsOfAnotherDevice) {
  NCCL_OR_SKIP(c);
  if (depbloom::backend::cuda_device_count() < 2) GTEST_SKIP() << "needs a second GPU";
  const Device other = Device::cuda((c.device().index + 1) % 2);
  depbloom::OwnedTensor t(DType::f32, Shape(4), other);
  EXPECT_THROW(c.all_reduce(t.view()), depbloom::Error);
}

TEST_F(GpuComm, MpiStagesCudaTensors) {
  Communicator& c = mpi_on_gpu();
  const Device d = Device::cuda(0);
  for (int64_t n : {1, 7, 1001}) {
    EXPECT_TRUE(check_all_reduce<float>(c, d, n, ReduceOp::sum));
    EXPECT_TRUE(check_all_reduce<double>(c, d, n, ReduceOp::mean));
    EXPECT_TRUE(check_all_gather<int32_t>(c, d, n));
    EXPECT_TRUE(check_broadcast<float>(c, d, n, c.size() - 1));
  }
  EXPECT_TRUE(check_all_gather_v<float>(c, d, uneven_counts(c.size())));
  EXPECT_TRUE(check_all_gather_v<int64_t>(c, d, std::vector<int64_t>(c.size(), 0)));
  EXPECT_TRUE(check_all_reduce<float>(c, d, 4097, ReduceOp::mean, true));
  EXPECT_TRUE(check_all_gather_v<double>(c, d, uneven_counts(c.size()), true));
}

// The staging buffers are kept: once warm, a step's collectives allocate no host memory.
TEST_F(GpuComm, MpiStagingReusesHostBuffers) {
  Communicator& c = mpi_on_gpu();
  const Device d = Device::cuda(0);
  depbloom::OwnedTensor grads = to_device(contribution<float>(c.rank(), 100000), d);
  const std::vector<int64_t> counts = uneven_counts(c.size());
  int64_t total = 0;
  for (int64_t k : counts) total += k * 172;
  std::vector<int64_t> row_counts(counts);
  for (int64_t& k : row_counts) k *= 172;
  depbloom::OwnedTensor rows(DType::f32, Shape(row_counts[static_cast<size_t>(c.rank())]), d);
  depbloom::OwnedTensor all_rows(DType::f32, Shape(total), d);
  auto step = [&] {
    c.all_reduce(grads.view(), ReduceOp::mean);
    c.all_gather_v(rows.view(), all_rows.view(), row_counts);
    c.iall_reduce(grads.view()).wait();
  };
  step();  // warm-up: the pool grows to the step's largest collective
  const int64_t before = depbloom::memory_counters().host_allocations.load();
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(depbloom::memory_counters().host_allocations.load(), before);
}

}  // namespace
}  // namespace dbtest
