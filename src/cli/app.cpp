// depbloom-train: command line, logging, device choice, default-data discovery, exit codes.
// Until the models land it runs the memory-only smoke job (smoke_job.h) on the shipped
// WIKI stream; the command and its exit codes stay as they are.
#include "depbloom/cli/app.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "depbloom/backend/runtime.h"
#include "depbloom/cli/smoke_job.h"
#include "depbloom/core/error.h"

#ifndef DEPBLOOM_SOURCE_DIR
#define DEPBLOOM_SOURCE_DIR ""
#endif

namespace depbloom::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kDefaultData = "wikipedia/wikipedia_edges.csv";

fs::path executable_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p.parent_path();
}

// The shipped data folder, found from the working directory, the build folder, an
// install (<prefix>/bin -> <prefix>/share/depbloom/data) or the source tree.
std::string find_default_data() {
  std::vector<fs::path> roots = {fs::current_path() / "data", executable_dir() / ".." / "data",
                                 executable_dir() / ".." / "share" / "depbloom" / "data",
                                 fs::path(DEPBLOOM_SOURCE_DIR) / "data"};
  for (const auto& r : roots) {
    std::error_code ec;
    if (fs::exists(r / kDefaultData, ec)) return fs::weakly_canonical(r / kDefaultData).string();
  }
  DB_THROW(data, "cannot find the shipped dataset data/{} (looked beside the working directory, "
                 "the executable, the install prefix and {}); pass --data PATH",
           kDefaultData, DEPBLOOM_SOURCE_DIR);
}

Device parse_device(const std::string& text) {
  if (text == "auto") {
    std::string why;
    if (backend::cuda_usable(&why)) return Device::cuda(0);
    spdlog::info("no usable GPU ({}); running on the CPU", why);
    return Device::cpu();
  }
  if (text == "cpu") return Device::cpu();
  if (text.rfind("cuda", 0) == 0) {
    int index = 0;
    if (text.size() > 5 && text[4] == ':') index = std::stoi(text.substr(5));
    std::string why;
    if (!backend::cuda_usable(&why))
      DB_THROW(usage, "--device {}: no usable GPU ({})", text, why);
    if (index >= backend::cuda_device_count())
      DB_THROW(usage, "--device {}: only {} GPU(s) present", text, backend::cuda_device_count());
    return Device::cuda(index);
  }
  DB_THROW(usage, "--device {}: expected auto, cpu or cuda:N", text);
}

}  // namespace

int run_train(int argc, char** argv) {
  CLI::App app{"depbloom-train: train memory-based temporal GNNs (TGN, JODIE, APAN)"};
  SmokeOptions opt;
  std::string device = "auto", data;
  int threads = 0;
  app.add_option("--data", data, "event stream file or folder (default: the shipped WIKI stream)");
  app.add_option("--device", device, "auto, cpu or cuda:N (auto: the first usable GPU, else the CPU)");
  app.add_option("--threads", threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", opt.seed, "random seed");
  app.add_option("--epochs", opt.epochs, "passes over the training events")->check(CLI::PositiveNumber);
  app.add_option("--batch", opt.batch, "events per batch")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : exit_code(ErrorKind::usage);
  }
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  try {
    if (threads > 0) backend::set_cpu_threads(threads);
    opt.device = parse_device(device);
    opt.data_path = data.empty() ? find_default_data() : data;
    spdlog::info("depbloom-train: device {}, {} CPU threads, data {}", opt.device.str(),
                 backend::cpu_threads(), opt.data_path);
    spdlog::info("the TGN/JODIE/APAN models are not in this build yet; running the memory-only "
                 "smoke job (GRU memory, dot-product scores, BCE, Adam)");
    SmokeReport r = run_smoke_job(opt);
    spdlog::info("smoke job: {} events in {:.2f} s ({:.0f} events/s); loss {:.4f} -> {:.4f}",
                 r.events, r.seconds, static_cast<double>(r.events) / r.seconds, r.first_loss,
                 r.last_loss);
    spdlog::info("stages: sample {:.2f} s, gather {:.2f} s, forward+backward {:.2f} s, "
                 "optimiser {:.2f} s, write-back {:.2f} s",
                 r.sample_s, r.gather_s, r.compute_s, r.optimise_s, r.write_back_s);
    return 0;
  } catch (const Error& e) {
    spdlog::error("{}", e.message());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return exit_code(ErrorKind::runtime);
  }
}

}  // namespace depbloom::cli
