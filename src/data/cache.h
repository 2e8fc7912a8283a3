// Internal to the data part: the event cache folder (one .npy per array plus meta.json),
// written atomically and read through one directory descriptor, so a reader never mixes
// files of two writers. `key` identifies the source and options a cache was built from.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depbloom/data/event_stream.h"

namespace depbloom::data::detail {

// Writes `stream` into `dir` (via a per-process temporary folder and a rename). When `dir`
// already holds a cache with the same key (another process won the race), keeps that one.
void write_cache_folder(const EventStream& stream, const std::string& dir,
                        const nlohmann::json& key);

// Reads the cache in `dir`. Returns nullopt and sets `stale` to the reason when the folder
// is missing or was built from other inputs or options (`key` null: any key is accepted).
// Throws a data error when the folder is there but unreadable or inconsistent.
std::optional<EventStream> read_cache_folder(const std::string& dir, const nlohmann::json& key,
                                             std::string& stale);

}  // namespace depbloom::data::detail
