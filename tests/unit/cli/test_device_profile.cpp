// Device profiles (configs/devices, the cost model's): every shipped profile loads by name,
// units convert to SI, and a bad profile fails with one message naming the file, the line
// and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "depbloom/cli/device_profile.h"
#include "depbloom/core/error.h"

namespace {

using depbloom::cli::load_device_profile;
using depbloom::cli::parse_device_profile;

const char* kGood = R"(name: test
gemm_gflop_s: 2
memory_gb_s: 3
op_launch_us: 4
host_plan_per_s: 5
host_to_device_gb_s: 0
all_reduce: {bandwidth_gb_s: 6, latency_us: 7, hop_latency_us: 8}
all_gather: {bandwidth_gb_s: 9, latency_us: 10, hop_latency_us: 0}
)";

// The message of the config error `yaml` raises, or "" when it parses.
std::string error_of(const std::string& yaml) {
  try {
    parse_device_profile(yaml, "bad.yaml");
  } catch (const depbloom::Error& e) {
    EXPECT_EQ(e.kind(), depbloom::ErrorKind::config);
    return e.message();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(DeviceProfile, ParsesInSiUnits) {
  const auto p = parse_device_profile(kGood, "good.yaml");
  EXPECT_EQ(p.name, "test");
  EXPECT_DOUBLE_EQ(p.gemm_flops, 2e9);
  EXPECT_DOUBLE_EQ(p.memory_bandwidth, 3e9);
  EXPECT_DOUBLE_EQ(p.op_launch, 4e-6);
  EXPECT_DOUBLE_EQ(p.host_plan_rate, 5);
  EXPECT_DOUBLE_EQ(p.host_to_device, 0);
  EXPECT_DOUBLE_EQ(p.all_reduce.bandwidth, 6e9);
  EXPECT_DOUBLE_EQ(p.all_reduce.latency, 7e-6);
  EXPECT_DOUBLE_EQ(p.all_reduce.hop_latency, 8e-6);
  EXPECT_DOUBLE_EQ(p.all_gather.bandwidth, 9e9);
  EXPECT_DOUBLE_EQ(p.all_gather.latency, 10e-6);
}

TEST(DeviceProfile, ErrorsNameTheKey) {
  EXPECT_EQ(error_of(kGood), "");
  EXPECT_EQ(error_of(replaced(kGood, "memory_gb_s: 3\n", "")),
            "bad.yaml: missing key 'memory_gb_s'");
  EXPECT_EQ(error_of(replaced(kGood, "memory_gb_s: 3", "memory_gb_s: fast")),
            "bad.yaml:3: key 'memory_gb_s' must be a number, got 'fast'");
  EXPECT_EQ(error_of(replaced(kGood, "gemm_gflop_s: 2", "gemm_gflop_s: 0")),
            "bad.yaml:2: key 'gemm_gflop_s' must be a positive number, got 0");
  EXPECT_EQ(error_of(replaced(kGood, "latency_us: 7", "latency_us: -1")),
            "bad.yaml:7: key 'all_reduce.latency_us' must be a number >= 0, got -1");
  EXPECT_EQ(error_of(replaced(kGood, "hop_latency_us: 0}", "hop_latency: 0}")),
            "bad.yaml:8: unknown key 'all_gather.hop_latency'");
  EXPECT_EQ(error_of(replaced(kGood, "op_launch_us", "launch_us")),
            "bad.yaml:4: unknown key 'launch_us'");
  EXPECT_EQ(
      error_of(replaced(kGood, "all_gather: {bandwidth_gb_s: 9, latency_us: 10, hop_latency_us: 0}",
                        "all_gather: 3")),
      "bad.yaml:8: key 'all_gather' must be a map of bandwidth_gb_s, latency_us and "
      "hop_latency_us");
  EXPECT_NE(error_of("name: [").find("bad.yaml:"), std::string::npos);
}

TEST(DeviceProfile, ShippedProfilesLoadByName) {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(
           std::filesystem::path(DEPBLOOM_SOURCE_DIR) / "configs" / "devices")) {
    const std::string name = f.path().stem().string();
    const auto p = load_device_profile(f.path().string());
    EXPECT_EQ(p.name, name) << f.path();
    EXPECT_GT(p.gemm_flops, 0);
    ++n;
  }
  EXPECT_GE(n, 4);
  for (const char* name : {"h200-nvlink", "a100-nvlink", "a100-pcie", "cpu-here"})
    EXPECT_EQ(load_device_profile(name).name, name);
  try {
    load_device_profile("no-such-device");
    ADD_FAILURE() << "no error";
  } catch (const depbloom::Error& e) {
    EXPECT_NE(e.message().find("--profile no-such-device: no such device profile"),
              std::string::npos);
  }
}

}  // namespace
