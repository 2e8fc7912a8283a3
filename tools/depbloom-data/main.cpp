// depbloom-data: inspect (`stats`), convert (`convert`) and generate (`synth`) event streams.
// Errors end with one line `depbloom-data: <message>` and the documented exit code
// (2 usage, 3 data, 4 runtime); logs go to stderr so that stdout stays machine-readable.
#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "depbloom/core/error.h"
#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/stream_stats.h"
#include "depbloom/data/synth.h"
#include "report.h"

namespace {

using namespace depbloom;

struct InputArgs {
  std::string path;
  std::string format = "auto";
  bool no_cache = false;
  bool drop_self_loops = false;
};

void add_input_options(CLI::App* cmd, InputArgs& in) {
  cmd->add_option("path", in.path, "events file, or a folder holding one or an event cache")
      ->required();
  cmd->add_option("--format", in.format,
                  fmt::format("input format: {}", fmt::join(data::format_choices(), " ")))
      ->capture_default_str();
  cmd->add_flag("--drop-self-loops", in.drop_self_loops, "drop events with src == dst");
  cmd->add_flag("--no-cache", in.no_cache, "parse the text even when a cache exists");
}

// A folder written by `convert` or `synth` (meta.json beside the arrays) is read directly;
// anything else goes through the loaders.
data::EventStream load(const InputArgs& in, bool use_cache) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(in.path, ec) && fs::exists(fs::path(in.path) / "meta.json", ec))
    return data::read_event_cache(in.path);
  data::LoadOptions options;
  options.format = in.format;
  options.drop_self_loops = in.drop_self_loops;
  options.use_cache = use_cache && !in.no_cache;
  return data::load_events(in.path, options);
}

void print_stats(const data::StreamStats& st, bool json, const data::SynthTargets* targets) {
  if (json) {
    nlohmann::json out = tools::stats_json(st);
    if (targets != nullptr) out["targets"] = tools::target_json(st, *targets);
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{}", data::format_stream_stats(st));
  if (targets != nullptr) fmt::print("\n{}", tools::target_table(st, *targets));
}

int run(int argc, char** argv) {
  CLI::App app{"depbloom-data: inspect, convert and generate temporal event streams"};
  app.require_subcommand(1);
  app.fallthrough();  // -q also after the subcommand
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "log warnings and errors only");

  InputArgs stats_in;
  bool stats_json = false;
  CLI::App* stats = app.add_subcommand("stats", "print the statistics of a stream");
  add_input_options(stats, stats_in);
  stats->add_flag("--json", stats_json, "print JSON instead of text");

  InputArgs convert_in;
  std::string convert_out;
  CLI::App* convert = app.add_subcommand("convert", "write a stream in the cache format");
  add_input_options(convert, convert_in);
  convert->add_option("-o,--output", convert_out, "folder to write")->required();

  std::string like, synth_out, synth_format = "cache";
  data::SynthSpec spec;
  bool synth_stats = false, synth_json = false;
  CLI::App* synth = app.add_subcommand("synth", "generate a stream with a published shape");
  synth->add_option("--like", like, "shape: wiki, reddit or wikitalk")
      ->required()
      ->check(CLI::IsMember({"wiki", "reddit", "wikitalk"}));
  synth->add_option("--scale", spec.scale, "multiplies node and event counts")
      ->capture_default_str();  // synthesize() rejects a non-positive scale
  synth->add_option("--seed", spec.seed, "random seed")->capture_default_str();
  synth->add_option("--edge-features", spec.edge_features, "float32 features per event")
      ->capture_default_str();
  synth->add_option("-o,--output", synth_out, "folder to write")->required();
  synth->add_option("--format", synth_format, "cache (loadable arrays), csv, or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"cache", "csv", "both"}));
  synth->add_flag("--stats", synth_stats, "print the statistics beside the shape's targets");
  synth->add_flag("--json", synth_json, "with --stats: print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    fmt::print(stderr, "depbloom-data: {}\n", e.what());
    return exit_code(ErrorKind::usage);
  }

  auto logger = spdlog::stderr_color_mt("depbloom-data");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%v");
  spdlog::set_level(quiet ? spdlog::level::warn : spdlog::level::info);

  if (stats->parsed()) {
    const data::EventStream s = load(stats_in, true);
    Stopwatch watch;
    const data::StreamStats st = data::compute_stream_stats(s);
    spdlog::info("stats of {} computed in {:.2f} s", s.name, watch.seconds());
    print_stats(st, stats_json, nullptr);
  } else if (convert->parsed()) {
    const data::EventStream s = load(convert_in, false);
    data::write_event_cache(s, convert_out);
    spdlog::info("wrote {} events, {} nodes to {}", s.num_events(), s.num_nodes, convert_out);
  } else if (synth->parsed()) {
    spec.shape = data::parse_synth_shape(like);
    Stopwatch watch;
    const data::EventStream s = data::synthesize(spec);
    spdlog::info("synth {} scale {} seed {}: {} events, {} nodes in {:.2f} s", like, spec.scale,
                 spec.seed, s.num_events(), s.num_nodes, watch.seconds());
    if (synth_format != "csv") data::write_event_cache(s, synth_out);
    if (synth_format != "cache") spdlog::info("wrote {}", tools::write_csv(s, synth_out));
    if (synth_stats) {
      const data::SynthTargets targets = data::synth_targets(spec.shape, spec.scale);
      print_stats(data::compute_stream_stats(s), synth_json, &targets);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const depbloom::Error& e) {
    std::fprintf(stderr, "depbloom-data: %s\n", e.message().c_str());
    return depbloom::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "depbloom-data: %s\n", e.what());
    return depbloom::exit_code(depbloom::ErrorKind::runtime);
  }
}
