// Load throughput of the data part: text parsing (MB/s and events/s) of the shipped WIKI
// file and of a JODIE-style CSV with 172 features per row, and loads from the .npy cache.
// Targets: parsing above 100 MB/s per thread, a cached WIKI load under 50 ms.
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "depbloom/data/loader.h"
#include "depbloom/data/mapped_file.h"

namespace {

using depbloom::data::EventStream;
using depbloom::data::LoadOptions;

const std::string kWiki = DEPBLOOM_SOURCE_DIR "/data/wikipedia/wikipedia_edges.csv";

void quiet() {
  spdlog::set_level(spdlog::level::warn);
}

void count_events(benchmark::State& state, int64_t bytes, int64_t events) {
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations() * events),
                                                  benchmark::Counter::kIsRate);
}

// Parsing only: the file is already in memory (mapped and faulted in).
void BM_ParseWikiCsv(benchmark::State& state) {
  quiet();
  depbloom::data::MappedFile file(kWiki);
  std::string text(file.view());
  int64_t events = 0;
  for (auto _ : state) {
    EventStream s = depbloom::data::parse_event_text(text, "jodie", kWiki);
    events = s.num_events();
    benchmark::DoNotOptimize(s.src.data());
  }
  count_events(state, static_cast<int64_t>(text.size()), events);
}
BENCHMARK(BM_ParseWikiCsv)->Unit(benchmark::kMillisecond);

// The whole uncached load: detection, mapping, parsing, remapping.
void BM_LoadWikiUncached(benchmark::State& state) {
  quiet();
  LoadOptions options;
  options.use_cache = false;
  const int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(kWiki));
  int64_t events = 0;
  for (auto _ : state) {
    EventStream s = depbloom::data::load_events(kWiki, options);
    events = s.num_events();
    benchmark::DoNotOptimize(s.src.data());
  }
  count_events(state, bytes, events);
}
BENCHMARK(BM_LoadWikiUncached)->Unit(benchmark::kMillisecond);

// A REDDIT-shaped JODIE CSV: 172 float features per row, so float parsing dominates.
std::string feature_csv(int rows) {
  std::string text = "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n";
  for (int r = 0; r < rows; ++r) {
    text += std::to_string(r % 9000) + "," + std::to_string(r % 977) + "," + std::to_string(r * 3) +
            ".0,0";
    for (int k = 0; k < 172; ++k) {
      text += "," + std::to_string(((r * 31 + k * 17) % 2000) * 0.000517 - 0.4);
    }
    text += "\n";
  }
  return text;
}

void BM_ParseFeatureCsv(benchmark::State& state) {
  quiet();
  const std::string text = feature_csv(20000);
  for (auto _ : state) {
    EventStream s = depbloom::data::parse_event_text(text, "jodie", "features.csv");
    benchmark::DoNotOptimize(s.edge_feat.data());
  }
  count_events(state, static_cast<int64_t>(text.size()), 20000);
}
BENCHMARK(BM_ParseFeatureCsv)->Unit(benchmark::kMillisecond);

// A load that finds a valid cache: checks the key, maps the .npy files and copies them.
void BM_LoadWikiCached(benchmark::State& state) {
  quiet();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("depbloom-bench-cache-" + std::to_string(::getpid()));
  LoadOptions options;
  options.cache_dir = dir.string();
  depbloom::data::load_events(kWiki, options);  // builds the cache
  int64_t bytes = 0;
  for (const auto& f :
       std::filesystem::directory_iterator(depbloom::data::cache_folder(kWiki, options))) {
    bytes += static_cast<int64_t>(f.file_size());
  }
  int64_t events = 0;
  for (auto _ : state) {
    EventStream s = depbloom::data::load_events(kWiki, options);
    events = s.num_events();
    benchmark::DoNotOptimize(s.src.data());
  }
  count_events(state, bytes, events);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_LoadWikiCached)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
