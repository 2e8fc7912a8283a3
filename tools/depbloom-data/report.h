// Output of depbloom-data: statistics as JSON, the comparison of a synthetic stream with the
// figures its shape aims at, and the JODIE/TGL-style CSV writer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "depbloom/data/event_stream.h"
#include "depbloom/data/stream_stats.h"
#include "depbloom/data/synth.h"

namespace depbloom::tools {

nlohmann::json stats_json(const data::StreamStats& s);

// One row per target the shape has: target, measured, relative error, within 10% or not.
std::string target_table(const data::StreamStats& s, const data::SynthTargets& t);
nlohmann::json target_json(const data::StreamStats& s, const data::SynthTargets& t);

// Writes the stream as text into `dir`: a bipartite stream as JODIE CSV <name>.csv (items
// numbered from 0 in their own space), any other as TGL-style edges.csv. Returns the path.
std::string write_csv(const data::EventStream& s, const std::string& dir);

}  // namespace depbloom::tools
