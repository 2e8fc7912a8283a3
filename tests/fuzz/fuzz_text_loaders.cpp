// libFuzzer target: the input, read as a file of every text format (JODIE, TGN, TGL, SNAP,
// KONECT, generic CSV in two layouts) and through format detection. A depbloom::Error is
// the expected answer to bad input; a crash, a sanitizer finding, another exception or a
// loaded stream that breaks the EventStream invariants is a finding.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "data/format_table.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"

namespace {

using depbloom::data::EventStream;
using depbloom::data::LoadOptions;

void check_or_abort(const EventStream& s, const char* format) {
  try {
    depbloom::data::check_event_stream(s);
    depbloom::data::summarize(s);
  } catch (const depbloom::Error& e) {
    std::fprintf(stderr, "format %s loaded a broken stream: %s\n", format, e.what());
    std::abort();
  }
  if (s.num_events() == 0) {
    std::fprintf(stderr, "format %s loaded an empty stream without an error\n", format);
    std::abort();
  }
}

void parse_as(std::string_view text, const char* format, const LoadOptions& options) {
  EventStream s;
  try {
    s = depbloom::data::parse_event_text(text, format, "fuzz", options);
  } catch (const depbloom::Error&) {
    return;  // rejected with a message: the expected outcome for bad input
  }
  check_or_abort(s, format);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  LoadOptions plain;
  for (const char* format : {"jodie", "tgn", "tgl", "snap", "konect", "csv"}) {
    parse_as(text, format, plain);
  }
  // The generic CSV in another layout: blank-separated, bipartite, label, split, features,
  // comments, and self-loops dropped.
  LoadOptions blank;
  blank.drop_self_loops = true;
  blank.columns.delimiter = ' ';
  blank.columns.header = false;
  blank.columns.comment = '#';
  blank.columns.time = 0;
  blank.columns.src = 1;
  blank.columns.dst = 2;
  blank.columns.label = 3;
  blank.columns.split = 4;
  blank.columns.first_feature = 5;
  blank.columns.bipartite = true;
  parse_as(text, "csv", blank);
  LoadOptions konect_plain;
  konect_plain.weight_as_feature = false;
  konect_plain.drop_self_loops = true;
  parse_as(text, "konect", konect_plain);
  try {
    depbloom::data::detail::guess_format("fuzz.txt", text);
  } catch (const depbloom::Error&) {
  }
  return 0;
}
