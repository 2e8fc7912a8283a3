// depbloom-train: command line, logging, device choice, default-data discovery, exit codes.
// Config: the option registry (options.h) filled from --config, --set and the flags.
// The training itself is train_command.h.
#include "depbloom/cli/app.h"

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>

#include "depbloom/backend/runtime.h"
#include "depbloom/cli/classify_command.h"
#include "depbloom/cli/options.h"
#include "depbloom/cli/train_command.h"
#include "depbloom/core/error.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/dist/launch.h"
#include "depbloom/train/checkpoint.h"

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
  DB_THROW(data,
           "cannot find the shipped dataset data/{} (looked beside the working directory, "
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
    if (!backend::cuda_usable(&why)) DB_THROW(usage, "--device {}: no usable GPU ({})", text, why);
    if (index >= backend::cuda_device_count())
      DB_THROW(usage, "--device {}: only {} GPU(s) present", text, backend::cuda_device_count());
    return Device::cuda(index);
  }
  DB_THROW(usage, "--device {}: expected auto, cpu or cuda:N", text);
}

// "<time>" in run.out becomes the start time, so repeated runs never share a folder.
std::string expand_run_folder(std::string pattern) {
  const std::string tag = "<time>";
  auto at = pattern.find(tag);
  if (at == std::string::npos) return pattern;
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return pattern.replace(at, tag.size(), stamp);
}

// Every rank must train the same thing: the ranks compare the hash of their effective
// configs (options.h) before any work, and a mismatch is a config error on every rank.
void check_same_config(dist::Communicator& comm, const OptionRegistry& cfg) {
  const int64_t mine = static_cast<int64_t>(cfg.hash());
  std::vector<int64_t> all(static_cast<size_t>(comm.size()));
  comm.all_gather(Tensor::wrap(const_cast<int64_t*>(&mine), Shape(1)),
                  Tensor::wrap(all.data(), Shape(comm.size())));
  std::string differ;
  for (int r = 1; r < comm.size(); ++r)
    if (all[static_cast<size_t>(r)] != all[0])
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    DB_THROW(config,
             "the ranks' effective configs differ: rank(s) {} do not match rank 0 (config hash "
             "{:016x} here); every rank must get the same --config, --set and flags",
             differ, static_cast<uint64_t>(mine));
}

// --ranks P outside mpirun: this same command again as P ranks under mpirun (without
// --ranks), with OMP_NUM_THREADS = cores / P unless it is set. mpirun runs as a child that
// gets this process's stop signals (launch.h); returns its exit status.
int relaunch_under_mpirun(int argc, char** argv, int64_t ranks) {
  if (!dist::built_with_mpi())
    DB_THROW(usage, "--ranks {}: this depbloom-train was built without MPI", ranks);
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const long per_rank = std::max(1L, cores / static_cast<long>(ranks));
    setenv("OMP_NUM_THREADS", std::to_string(per_rank).c_str(), 1);
  }
  // The launcher reports a stop signal itself; the ranks mpirun then stops stay silent.
  setenv(dist::kLauncherEnv, "1", 1);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> args = {"mpirun",
                                   "-np",
                                   std::to_string(ranks),
                                   "--oversubscribe",
                                   "--allow-run-as-root",
                                   "--bind-to",
                                   "none",
                                   "-x",
                                   "OMP_NUM_THREADS",
                                   "-x",
                                   dist::kLauncherEnv,
                                   ec ? std::string(argv[0]) : self.string()};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--ranks=", 0) == 0) continue;
    args.push_back(a);
  }
  return dist::run_launcher(args, "depbloom-train");
}

// The command line: flags that set config keys, and the run's mode.
struct CommandLine {
  std::string config_file, data, out, device;
  std::vector<std::string> sets;
  int64_t threads = -1, seed = -1;
  std::string resume, eval_only, scores, classify, profile;
  bool print_config = false, plan = false;
  int64_t ranks = 1;
};

void add_flags(CLI::App& app, CommandLine& cl) {
  app.add_option("--config", cl.config_file, "YAML run config (keys: docs/configs.md)");
  app.add_option("--set", cl.sets,
                 "override one key, e.g. --set train.batch_size=200 (repeatable)");
  app.add_option("--data", cl.data, "event stream file or folder (sets data.path)");
  app.add_option("--out", cl.out, "run folder (sets run.out)");
  app.add_option("--device", cl.device, "auto, cpu or cuda:N (sets run.device)");
  app.add_option("--threads", cl.threads, "CPU threads, 0 = all cores (sets run.threads)");
  app.add_option("--seed", cl.seed, "random seed (sets run.seed)");
  app.add_option("--resume", cl.resume, "continue the run in this folder from its last.ckpt");
  app.add_option("--eval-only", cl.eval_only, "evaluate this checkpoint on the test split");
  app.add_option("--scores", cl.scores,
                 "with --eval-only: write each test event's logits into this folder of .npy "
                 "files (docs/scores.md)");
  app.add_option("--classify", cl.classify,
                 "train a node classifier on this link-prediction checkpoint's frozen "
                 "embeddings (classify.* keys; docs/node_classification.md)");
  app.add_flag("--print-config", cl.print_config, "print the effective config and exit");
  app.add_flag("--plan", cl.plan,
               "print the window plan and the collectives and bytes one epoch of the strategy "
               "makes over --ranks ranks, then exit without training (one process)");
  app.add_option("--profile", cl.profile,
                 "with --plan: model the epoch's time on this device profile (a name in "
                 "configs/devices, or a YAML path; docs/cost_model.md)");
  app.add_option("--ranks", cl.ranks,
                 "train data-parallel (strategy.name) on this many ranks of this machine: "
                 "starts itself under mpirun")
      ->check(CLI::PositiveNumber);
}

// The run's config: a resumed run's or a checkpoint's own, then --config, --set and the
// flags, in that order.
OptionRegistry effective_config(const CommandLine& cl) {
  OptionRegistry cfg = depbloom_options();
  if (int(!cl.resume.empty()) + int(!cl.eval_only.empty()) + int(!cl.classify.empty()) > 1)
    DB_THROW(usage, "--resume, --eval-only and --classify exclude each other");
  const std::string& ckpt = cl.eval_only.empty() ? cl.classify : cl.eval_only;
  if (!cl.resume.empty()) {
    // The run's own config; --set may still change keys that keep the model (epochs).
    cfg.load_yaml_file((fs::path(cl.resume) / "config.yaml").string());
    cfg.set_value("run.out", cl.resume);
  } else if (!ckpt.empty()) {
    cfg.load_yaml_string(read_checkpoint(ckpt).config_text, ckpt + " (its saved config)");
    cfg.set_value("run.out", fs::path(ckpt).parent_path().string());
  }
  if (!cl.config_file.empty()) cfg.load_yaml_file(cl.config_file);
  cfg.apply_sets(cl.sets);
  if (!cl.data.empty()) cfg.set_value("data.path", cl.data);
  if (!cl.out.empty()) cfg.set_value("run.out", cl.out);
  if (!cl.device.empty()) cfg.set_value("run.device", cl.device);
  if (cl.threads >= 0) cfg.set_value("run.threads", cl.threads);
  if (cl.seed >= 0) cfg.set_value("run.seed", cl.seed);
  return cfg;
}

void set_cpu_threads(const RunConfig& c, const dist::LaunchEnv& env, bool multi_rank) {
  if (c.run.threads > 0) {
    backend::set_cpu_threads(static_cast<int>(c.run.threads));
  } else if (multi_rank && std::getenv("OMP_NUM_THREADS") == nullptr) {
    // A hand-started mpirun: the ranks on this machine share its cores (cores / local
    // ranks each, within the cores mpirun bound this rank to), as --ranks P does.
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const long share = std::max(1L, cores / std::max(1, env.local_size));
    backend::set_cpu_threads(static_cast<int>(std::min<long>(share, backend::cpu_threads())));
  }
}

// Several ranks, or one with mpi or nccl named (a smoke run of the collectives), get a
// communicator; a CUDA rank without a GPU index named takes its local rank's GPU
// (round-robin: under the mpi communicator ranks may share one). Null: one local rank.
std::unique_ptr<dist::Communicator> connect_ranks(const OptionRegistry& cfg,
                                                  const dist::LaunchEnv& env, bool multi_rank,
                                                  TrainCommand& cmd) {
  const RunConfig& c = cfg.config();
  const std::string& kind = c.dist.communicator;
  if (!multi_rank && kind != "mpi" && kind != "nccl") return nullptr;
  if (cmd.device.is_cuda() && c.run.device.find(':') == std::string::npos)
    cmd.device = Device::cuda(env.local_rank % backend::cuda_device_count());
  std::unique_ptr<dist::Communicator> comm = dist::make_communicator(kind, cmd.device);
  // From the first collective on, a rank that stops making progress ends every rank.
  if (!(c.dist.timeout_s >= 0))
    DB_THROW(config, "dist.timeout_s must be >= 0 seconds (0: no limit), got {}", c.dist.timeout_s);
  comm->set_timeout(c.dist.timeout_s);
  cmd.device = comm->device();
  cmd.comm = comm.get();
  cmd.write_files = comm->rank() == 0;
  check_same_config(*comm, cfg);
  return comm;
}

// Creates the run folder (on the rank that writes files) and saves the effective config.
void prepare_run_folder(const OptionRegistry& cfg, TrainCommand& cmd) {
  const fs::path run_dir = expand_run_folder(cfg.config().run.out);
  cmd.run_dir = run_dir.string();
  if (cmd.write_files) {
    std::error_code ec;
    fs::create_directories(run_dir, ec);
    if (ec)
      DB_THROW(runtime, "cannot create the run folder {}: {}", run_dir.string(), ec.message());
    if (cmd.eval_ckpt.empty() && cmd.classify_ckpt.empty())
      cfg.write_effective_config((run_dir / "config.yaml").string());
  }
  spdlog::info("effective config (saved in {}):\n{}", (run_dir / "config.yaml").string(),
               cfg.dump_yaml());
}

}  // namespace

int run_train(int argc, char** argv) {
  CLI::App app{"depbloom-train: train memory-based temporal GNNs (TGN, JODIE, APAN)"};
  CommandLine cl;
  add_flags(app, cl);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : exit_code(ErrorKind::usage);
  }
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  // Under mpirun with several ranks: one communicator; rank 0 logs and writes the files,
  // the others report only warnings and errors; every fatal error ends all ranks.
  const dist::LaunchEnv env = dist::launch_env();
  const bool multi_rank = env.under_mpirun && env.size > 1;
  if (multi_rank) {
    spdlog::set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}/{}] [%^%l%$] %v", env.rank, env.size));
    if (env.rank != 0) spdlog::set_level(spdlog::level::warn);
  }
  std::unique_ptr<dist::Communicator> comm;
  auto fail = [&](int code, const std::string& message) {
    spdlog::error("{}", message);
    if (comm != nullptr && comm->size() > 1) comm->abort(code, message);  // never returns
    return code;
  };
  try {
    if (cl.ranks > 1 && !env.under_mpirun && !cl.plan)
      return relaunch_under_mpirun(argc, argv, cl.ranks);
    // Ctrl-C (SIGINT), SIGTERM or SIGHUP end this process at once with 128 + signal; under
    // mpirun that is how mpirun stops the ranks, and a rank blocked in a collective could
    // not stop cleanly anyway (its peers would wait for it). One line says so: rank 0's
    // (mpirun stops every rank alike), or none when the --ranks launcher reports it.
    dist::install_stop_handlers(
        multi_rank ? fmt::format("[rank {}/{}] ", env.rank, env.size) : "depbloom-train: ",
        multi_rank && (env.rank != 0 || std::getenv(dist::kLauncherEnv) != nullptr));
    if (cl.ranks > 1 && env.size != cl.ranks && !cl.plan)
      spdlog::warn("--ranks {} ignored: mpirun started {} ranks", cl.ranks, env.size);
    if (!cl.profile.empty() && !cl.plan) DB_THROW(usage, "--profile models a --plan: add --plan");
    if (!cl.scores.empty() && cl.eval_only.empty())
      DB_THROW(usage, "--scores dumps an --eval-only test: add --eval-only CKPT");
    const OptionRegistry cfg = effective_config(cl);
    if (cl.print_config) {
      std::fputs(cfg.dump_yaml().c_str(), stdout);
      return 0;
    }
    const RunConfig& c = cfg.config();
    set_cpu_threads(c, env, multi_rank);
    backend::set_tf32(c.run.tf32);
    TrainCommand cmd;
    cmd.device = parse_device(c.run.device);
    cmd.data_path = c.data.path.empty() ? find_default_data() : c.data.path;
    if (cl.plan) {  // one process, no communicator, no run folder
      if (multi_rank) DB_THROW(usage, "--plan runs in one process: use --ranks, not mpirun");
      cmd.plan_ranks = static_cast<int>(cl.ranks);
      cmd.profile = cl.profile;
      return run_train_command(cfg, cmd);
    }
    comm = connect_ranks(cfg, env, multi_rank, cmd);
    cmd.resume_dir = cl.resume;
    cmd.eval_ckpt = cl.eval_only;
    cmd.scores = cl.scores;
    cmd.classify_ckpt = cl.classify;
    prepare_run_folder(cfg, cmd);
    spdlog::info("depbloom-train: device {}, {} CPU threads{}", cmd.device.str(),
                 backend::cpu_threads(),
                 comm ? fmt::format(", {} ranks over {} ({})", comm->size(), comm->name(),
                                    c.trainer.strategy.name)
                      : std::string());
    int rc =
        cmd.classify_ckpt.empty() ? run_train_command(cfg, cmd) : run_classify_command(cfg, cmd);
    spdlog::info("run folder: {}", cmd.run_dir);
    return rc;
  } catch (const Error& e) {
    return fail(exit_code(e.kind()), e.message());
  } catch (const std::exception& e) {
    return fail(exit_code(ErrorKind::runtime), e.what());
  }
}

}  // namespace depbloom::cli
