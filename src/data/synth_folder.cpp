// The synthetic shapes' names and widths, and the folder-name convention that carries a
// stream's shape, scale and width. Kept apart from the generator so the loader (and the
// fuzz build, which compiles the readers alone) can name the command for a missing folder.
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "depbloom/core/error.h"
#include "depbloom/data/synth.h"

namespace depbloom::data {

SynthShape parse_synth_shape(const std::string& name) {
  if (name == "wiki") return SynthShape::wiki;
  if (name == "reddit") return SynthShape::reddit;
  if (name == "wikitalk") return SynthShape::wikitalk;
  DB_THROW(usage, "unknown synthetic shape '{}' (expected wiki, reddit or wikitalk)", name);
}

const char* synth_shape_name(SynthShape shape) {
  switch (shape) {
    case SynthShape::wiki:
      return "wiki";
    case SynthShape::reddit:
      return "reddit";
    case SynthShape::wikitalk:
      return "wikitalk";
  }
  return "?";
}

int64_t synth_edge_features(SynthShape shape) {
  return shape == SynthShape::wikitalk ? 0 : 172;
}

std::string synth_folder_name(const SynthSpec& spec) {
  return fmt::format("{}-s{}-f{}", synth_shape_name(spec.shape), spec.scale, spec.edge_features);
}

std::string synth_command_for(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const size_t s = name.find("-s");
  const size_t f = name.rfind("-f");
  if (s == std::string::npos || f == std::string::npos || f < s) return "";
  const std::string like = name.substr(0, s);
  if (like != "wiki" && like != "reddit" && like != "wikitalk") return "";
  const std::string scale = name.substr(s + 2, f - s - 2);
  const std::string width = name.substr(f + 2);
  char* end = nullptr;
  const double parsed_scale = std::strtod(scale.c_str(), &end);
  if (scale.empty() || *end != '\0' || !(parsed_scale > 0)) return "";
  if (width.empty() || width.find_first_not_of("0123456789") != std::string::npos) return "";
  return fmt::format("depbloom-data synth --like {} --scale {} --seed 0 --edge-features {} -o {}",
                     like, scale, width, path);
}

}  // namespace depbloom::data
