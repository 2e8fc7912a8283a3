// Reading a device profile: a flat YAML map (two nested link maps, optional step curves) of
// numbers in the units the key names (GFLOP/s, GB/s, microseconds, seconds), converted to SI.
#include "depbloom/cli/device_profile.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "depbloom/core/error.h"

namespace depbloom::cli {
namespace fs = std::filesystem;
namespace {

class ProfileReader {
 public:
  ProfileReader(const YAML::Node& root, std::string source)
      : root_(root), source_(std::move(source)) {}

  // The number at key (within `map`, under dotted name `key`): > 0, or >= 0 when zero_ok.
  double number(const YAML::Node& map, const std::string& name, const std::string& key,
                bool zero_ok) {
    const YAML::Node v = map[name];
    if (!v && map.is(root_)) DB_THROW(config, "{}: missing key '{}'", source_, key);
    if (!v) DB_THROW(config, "{}:{}: missing key '{}'", source_, line(map), key);
    double x = 0;
    try {
      x = v.as<double>();
    } catch (const YAML::Exception&) {
      DB_THROW(config, "{}:{}: key '{}' must be a number, got '{}'", source_, line(v), key,
               v.IsScalar() ? v.Scalar() : std::string("a map or list"));
    }
    if (!(x > 0 || (zero_ok && x == 0)))
      DB_THROW(config, "{}:{}: key '{}' must be {}, got {}", source_, line(v), key,
               zero_ok ? "a number >= 0" : "a positive number", v.Scalar());
    return x;
  }

  // A whole number >= 1 at key.
  int count(const YAML::Node& map, const std::string& name, const std::string& key) {
    const double x = number(map, name, key, false);
    if (x != static_cast<double>(static_cast<int>(x)))
      DB_THROW(config, "{}:{}: key '{}' must be a whole number >= 1, got {}", source_,
               line(map[name]), key, map[name].Scalar());
    return static_cast<int>(x);
  }

  costmodel::LinkCost link(const std::string& name) {
    const YAML::Node v = root_[name];
    if (!v) DB_THROW(config, "{}: missing key '{}'", source_, name);
    if (!v.IsMap())
      DB_THROW(config,
               "{}:{}: key '{}' must be a map of bandwidth_gb_s, latency_us and hop_latency_us",
               source_, line(v), name);
    only(v,
         {"bandwidth_gb_s", "latency_us", "hop_latency_us", "ll_latency_us", "ll_hop_latency_us",
          "ll_bandwidth_share"},
         name + ".");
    costmodel::LinkCost c;
    c.bandwidth = number(v, "bandwidth_gb_s", name + ".bandwidth_gb_s", false) * 1e9;
    c.latency = number(v, "latency_us", name + ".latency_us", true) * 1e-6;
    c.hop_latency = number(v, "hop_latency_us", name + ".hop_latency_us", true) * 1e-6;
    // NCCL's LL protocol: all three keys or none (then Simple prices every call).
    if (v["ll_latency_us"] || v["ll_hop_latency_us"] || v["ll_bandwidth_share"]) {
      c.ll_latency = number(v, "ll_latency_us", name + ".ll_latency_us", true) * 1e-6;
      c.ll_hop_latency = number(v, "ll_hop_latency_us", name + ".ll_hop_latency_us", true) * 1e-6;
      c.ll_bandwidth_share = number(v, "ll_bandwidth_share", name + ".ll_bandwidth_share", false);
      if (c.ll_bandwidth_share > 1)
        DB_THROW(config, "{}:{}: key '{}.ll_bandwidth_share' must be in (0, 1], got {}", source_,
                 line(v["ll_bandwidth_share"]), name, v["ll_bandwidth_share"].Scalar());
    }
    return c;
  }

  // step_curves: a map of model name to its points [{batch, device_seconds}, ...], batches
  // strictly increasing.
  std::vector<costmodel::StepCurve> curves() {
    const YAML::Node v = root_["step_curves"];
    std::vector<costmodel::StepCurve> out;
    if (!v) return out;
    if (!v.IsMap())
      DB_THROW(config, "{}:{}: key 'step_curves' must be a map of model name to points", source_,
               line(v));
    for (auto it = v.begin(); it != v.end(); ++it) {
      costmodel::StepCurve c;
      c.model = it->first.Scalar();
      const std::string key = "step_curves." + c.model;
      const YAML::Node list = it->second;
      if (!list.IsSequence() || list.size() == 0)
        DB_THROW(config, "{}:{}: key '{}' must be a list of {{batch, device_seconds}} points",
                 source_, line(list), key);
      for (size_t i = 0; i < list.size(); ++i) {
        const YAML::Node pt = list[i];
        const std::string at = fmt::format("{}[{}]", key, i);
        if (!pt.IsMap())
          DB_THROW(config, "{}:{}: key '{}' must be a map of batch and device_seconds", source_,
                   line(pt), at);
        only(pt, {"batch", "device_seconds"}, at + ".");
        costmodel::StepTimePoint p{number(pt, "batch", at + ".batch", false),
                                   number(pt, "device_seconds", at + ".device_seconds", false)};
        if (!c.points.empty() && !(p.batch > c.points.back().batch))
          DB_THROW(config, "{}:{}: key '{}.batch' must exceed the previous point's, got {}",
                   source_, line(pt["batch"]), at, pt["batch"].Scalar());
        c.points.push_back(p);
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  // Every key of `map` is one of `keys`.
  void only(const YAML::Node& map, const std::set<std::string>& keys, const std::string& prefix) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node k = it->first;
      if (!k.IsScalar() || keys.count(k.Scalar()) == 0)
        DB_THROW(config, "{}:{}: unknown key '{}{}'", source_, line(k), prefix,
                 k.IsScalar() ? k.Scalar() : std::string("?"));
    }
  }

  int line(const YAML::Node& n) const { return n.Mark().line + 1; }

 private:
  YAML::Node root_;
  std::string source_;
};

}  // namespace

costmodel::DeviceProfile parse_device_profile(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    DB_THROW(config, "{}:{}: malformed YAML: {}", source, e.mark.line + 1, e.msg);
  }
  if (!root || !root.IsMap()) DB_THROW(config, "{}: expected a map of profile keys", source);
  ProfileReader r(root, source);
  r.only(root,
         {"name", "description", "calibrated", "gemm_gflop_s", "memory_gb_s", "op_launch_us",
          "host_plan_per_s", "host_threads", "host_to_device_gb_s", "upload_latency_us",
          "all_reduce", "all_gather", "step_curves"},
         "");
  costmodel::DeviceProfile p;
  const YAML::Node name = root["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty())
    DB_THROW(config, "{}: missing key 'name'", source);
  p.name = name.Scalar();
  p.gemm_flops = r.number(root, "gemm_gflop_s", "gemm_gflop_s", false) * 1e9;
  p.memory_bandwidth = r.number(root, "memory_gb_s", "memory_gb_s", false) * 1e9;
  p.op_launch = r.number(root, "op_launch_us", "op_launch_us", true) * 1e-6;
  p.host_plan_rate = r.number(root, "host_plan_per_s", "host_plan_per_s", false);
  p.host_threads = r.count(root, "host_threads", "host_threads");
  p.host_to_device = r.number(root, "host_to_device_gb_s", "host_to_device_gb_s", true) * 1e9;
  if (root["upload_latency_us"])
    p.upload_latency = r.number(root, "upload_latency_us", "upload_latency_us", true) * 1e-6;
  p.all_reduce = r.link("all_reduce");
  p.all_gather = r.link("all_gather");
  p.step_curves = r.curves();
  return p;
}

costmodel::DeviceProfile load_device_profile(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos || fs::path(name_or_path).extension() == ".yaml";
  std::vector<fs::path> candidates;
  if (is_path) {
    candidates.emplace_back(name_or_path);
  } else {
    const fs::path rel = fs::path("configs") / "devices" / (name_or_path + ".yaml");
    candidates = {fs::current_path() / rel};
    const fs::path shipped = fs::path(DEPBLOOM_SOURCE_DIR) / rel;
    std::error_code ec;
    if (!fs::equivalent(fs::current_path() / "configs", shipped.parent_path().parent_path(), ec))
      candidates.push_back(shipped);
  }
  for (const fs::path& f : candidates) {
    std::ifstream in(f);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    return parse_device_profile(text.str(), f.string());
  }
  DB_THROW(config, "--profile {}: no such device profile (looked for {}{})", name_or_path,
           candidates.front().string(),
           candidates.size() > 1 ? " and " + candidates.back().string() : std::string());
}

}  // namespace depbloom::cli
