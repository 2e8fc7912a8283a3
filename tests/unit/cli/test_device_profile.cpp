// Device profiles (configs/devices, the cost model's): every shipped profile loads by name,
// units convert to SI, and a bad profile fails with one message naming the file, the line
// and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
host_threads: 2
)";

// kGood with the optional keys: an upload latency, NCCL's LL protocol and step curves.
const char* kOptional = R"(upload_latency_us: 11
all_reduce_ll: {ll_latency_us: 1.5, ll_hop_latency_us: 0.5, ll_bandwidth_share: 0.25}
step_curves:
  tgn:
    - {batch: 600, device_seconds: 0.002}
    - {batch: 1200, device_seconds: 0.003}
  jodie: [{batch: 100, device_seconds: 0.001}]
)";

std::string with_optional() {
  std::string text = std::string(kGood) + kOptional;
  // The LL keys go inside all_reduce's map.
  text.replace(text.find("hop_latency_us: 8}"), 18,
               "hop_latency_us: 8, ll_latency_us: 1.5, ll_hop_latency_us: 0.5, "
               "ll_bandwidth_share: 0.25}");
  text.erase(text.find("all_reduce_ll:"), text.find("step_curves:") - text.find("all_reduce_ll:"));
  return text;
}

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
  EXPECT_EQ(p.host_threads, 2);
  // Optional keys left out: uploads cost a launch, Simple only, no curves.
  EXPECT_LT(p.upload_latency, 0);
  EXPECT_EQ(p.all_reduce.ll_bandwidth_share, 0);
  EXPECT_TRUE(p.step_curves.empty());
}

TEST(DeviceProfile, ParsesTheOptionalKeys) {
  const auto p = parse_device_profile(with_optional(), "good.yaml");
  EXPECT_DOUBLE_EQ(p.upload_latency, 11e-6);
  EXPECT_DOUBLE_EQ(p.all_reduce.ll_latency, 1.5e-6);
  EXPECT_DOUBLE_EQ(p.all_reduce.ll_hop_latency, 0.5e-6);
  EXPECT_DOUBLE_EQ(p.all_reduce.ll_bandwidth_share, 0.25);
  EXPECT_EQ(p.all_gather.ll_bandwidth_share, 0);
  ASSERT_EQ(p.step_curves.size(), 2u);
  EXPECT_EQ(p.step_curves[0].model, "tgn");
  ASSERT_EQ(p.step_curves[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(p.step_curves[0].points[1].batch, 1200);
  EXPECT_DOUBLE_EQ(p.step_curves[0].points[1].device_seconds, 0.003);
  EXPECT_EQ(p.step_curves[1].model, "jodie");
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
  EXPECT_EQ(error_of(replaced(kGood, "host_threads: 2\n", "")),
            "bad.yaml: missing key 'host_threads'");
  EXPECT_EQ(error_of(replaced(kGood, "host_threads: 2", "host_threads: 1.5")),
            "bad.yaml:9: key 'host_threads' must be a whole number >= 1, got 1.5");
}

// Bad optional keys: each error names the file, the line and the key.
TEST(DeviceProfile, OptionalKeyErrorsNameTheKey) {
  const std::string good = with_optional();
  ASSERT_EQ(error_of(good), "");
  const struct {
    const char* from;
    const char* to;
    const char* message;
  } cases[] = {
      {"upload_latency_us: 11", "upload_latency_us: -1",
       "bad.yaml:10: key 'upload_latency_us' must be a number >= 0, got -1"},
      {", ll_bandwidth_share: 0.25}", "}",
       "bad.yaml:7: missing key 'all_reduce.ll_bandwidth_share'"},
      {"ll_bandwidth_share: 0.25}", "ll_bandwidth_share: 2}",
       "bad.yaml:7: key 'all_reduce.ll_bandwidth_share' must be in (0, 1], got 2"},
      {"{batch: 1200,", "{batch: 600,",
       "bad.yaml:14: key 'step_curves.tgn[1].batch' must exceed the previous point's, got 600"},
      {"device_seconds: 0.003}", "seconds: 0.003}",
       "bad.yaml:14: unknown key 'step_curves.tgn[1].seconds'"},
      {"jodie: [{batch: 100, device_seconds: 0.001}]", "jodie: []",
       "bad.yaml:15: key 'step_curves.jodie' must be a list of {batch, device_seconds} points"},
      {"{batch: 600, device_seconds: 0.002}", "{batch: 600, device_seconds: 0}",
       "bad.yaml:13: key 'step_curves.tgn[0].device_seconds' must be a positive number, got 0"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(replaced(good, c.from, c.to)), c.message) << c.to;
}

// --profile takes a path as well as a name: a profile in any folder, under any file name.
TEST(DeviceProfile, LoadsFromAPath) {
  const auto dir = std::filesystem::temp_directory_path() / "depbloom_profile_path_test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "measured.yaml";
  {
    std::ofstream out(file);
    out << with_optional();
  }
  const auto p = load_device_profile(file.string());
  EXPECT_EQ(p.name, "test");
  EXPECT_EQ(p.step_curves.size(), 2u);
  std::filesystem::remove_all(dir);
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
