// depbloom-data: inspect (`stats`), convert (`convert`), generate (`synth`) and download
// (`get`, `list`) event streams.
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
#include "get.h"
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

// The command line: every subcommand's arguments, filled by CLI11.
struct Commands {
  bool quiet = false;
  InputArgs stats_in, convert_in;
  bool stats_json = false;
  std::string convert_out;
  std::string like, synth_out, synth_format = "cache";
  data::SynthSpec spec;
  bool synth_stats = false, synth_json = false;
  tools::GetOptions get;
  std::string list_dir = "data";
  CLI::App *stats = nullptr, *convert = nullptr, *synth = nullptr, *get_cmd = nullptr,
           *list = nullptr;
};

void add_inspect_commands(CLI::App& app, Commands& c) {
  c.stats = app.add_subcommand("stats", "print the statistics of a stream");
  add_input_options(c.stats, c.stats_in);
  c.stats->add_flag("--json", c.stats_json, "print JSON instead of text");
  c.convert = app.add_subcommand("convert", "write a stream in the cache format");
  add_input_options(c.convert, c.convert_in);
  c.convert->add_option("-o,--output", c.convert_out, "folder to write")->required();
}

void add_synth_command(CLI::App& app, Commands& c) {
  CLI::App* synth = app.add_subcommand("synth", "generate a stream with a published shape");
  c.synth = synth;
  synth->add_option("--like", c.like, "shape: wiki, reddit or wikitalk")
      ->required()
      ->check(CLI::IsMember({"wiki", "reddit", "wikitalk"}));
  synth->add_option("--scale", c.spec.scale, "multiplies node and event counts")
      ->capture_default_str();  // synthesize() rejects a non-positive scale
  synth->add_option("--seed", c.spec.seed, "random seed")->capture_default_str();
  c.spec.edge_features = -1;
  synth->add_option("--edge-features", c.spec.edge_features,
                    "float32 features per event (default: the shape's, 172 for wiki and reddit)");
  synth->add_option("-o,--output", c.synth_out,
                    "folder to write (default: data/synth/<like>-s<scale>-f<features>)");
  synth->add_option("--format", c.synth_format, "cache (loadable arrays), csv, or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"cache", "csv", "both"}));
  synth->add_flag("--stats", c.synth_stats, "print the statistics beside the shape's targets");
  synth->add_flag("--json", c.synth_json, "with --stats: print JSON");
}

void add_get_commands(CLI::App& app, Commands& c) {
  c.get_cmd = app.add_subcommand(
      "get", "download a known dataset, check it and convert it into the cache (see `list`)");
  c.get_cmd->add_option("name", c.get.name, "dataset name, as `depbloom-data list` shows it")
      ->required();
  c.get_cmd->add_option("--dir", c.get.dir, "folder that receives DIR/<name>/")
      ->capture_default_str();
  c.get_cmd->add_option("--from", c.get.from, "use this file, fetched by hand, instead of the URL");
  c.list = app.add_subcommand("list", "show the known datasets and which are here");
  c.list->add_option("--dir", c.list_dir, "folder that `get` fills")->capture_default_str();
}

void run_synth(Commands& c) {
  data::SynthSpec& spec = c.spec;
  spec.shape = data::parse_synth_shape(c.like);
  if (spec.edge_features < 0) spec.edge_features = data::synth_edge_features(spec.shape);
  if (c.synth_out.empty()) c.synth_out = "data/synth/" + data::synth_folder_name(spec);
  Stopwatch watch;
  const data::EventStream s = data::synthesize(spec);
  spdlog::info("synth {} scale {} seed {} features {}: {} events, {} nodes in {:.2f} s", c.like,
               spec.scale, spec.seed, spec.edge_features, s.num_events(), s.num_nodes,
               watch.seconds());
  if (c.synth_format != "csv") data::write_event_cache(s, c.synth_out);
  if (c.synth_format != "cache") spdlog::info("wrote {}", tools::write_csv(s, c.synth_out));
  if (c.synth_format == "cache") spdlog::info("wrote {}", c.synth_out);
  if (c.synth_stats) {
    const data::SynthTargets targets = data::synth_targets(spec.shape, spec.scale);
    print_stats(data::compute_stream_stats(s), c.synth_json, &targets);
  }
}

void dispatch(Commands& c) {
  if (c.get_cmd->parsed()) {
    tools::get_dataset(c.get);
  } else if (c.list->parsed()) {
    tools::list_datasets(c.list_dir);
  } else if (c.stats->parsed()) {
    const data::EventStream s = load(c.stats_in, true);
    Stopwatch watch;
    const data::StreamStats st = data::compute_stream_stats(s);
    spdlog::info("stats of {} computed in {:.2f} s", s.name, watch.seconds());
    print_stats(st, c.stats_json, nullptr);
  } else if (c.convert->parsed()) {
    const data::EventStream s = load(c.convert_in, false);
    data::write_event_cache(s, c.convert_out);
    spdlog::info("wrote {} events, {} nodes to {}", s.num_events(), s.num_nodes, c.convert_out);
  } else if (c.synth->parsed()) {
    run_synth(c);
  }
}

int run(int argc, char** argv) {
  CLI::App app{"depbloom-data: inspect, convert, generate and download temporal event streams"};
  app.require_subcommand(1);
  app.fallthrough();  // -q also after the subcommand
  Commands c;
  app.add_flag("-q,--quiet", c.quiet, "log warnings and errors only");
  add_inspect_commands(app, c);
  add_synth_command(app, c);
  add_get_commands(app, c);
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
  spdlog::set_level(c.quiet ? spdlog::level::warn : spdlog::level::info);
  dispatch(c);
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
