// The JSON lines a run writes (metrics.jsonl, steps.jsonl): one object per epoch with its
// loss, speed, stage times, validation metrics and collectives, one per test.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "depbloom/train/trainer.h"

namespace depbloom::train {

nlohmann::json eval_json(const EvalResult& r);  // null when the split had no events
// The epoch's collectives: sync points (blocking calls, on the critical path) and, per kind,
// calls and bytes.
nlohmann::json comm_json(const EpochResult& r);
// The same as one log line ("; 8 ranks (depbloom): 12 sync points, all_reduce 9 x 3.31 MB,
// ..."); empty for one rank.
std::string comm_text(const EpochResult& r);
// The epoch's critical path (DESIGN.md 7.3): the step loop's wall time, busy seconds of the
// main thread (its stages, waits included) and of the side thread, time hidden by overlap
// (0 with the pipeline off), waits on the side queue and on blocking collectives, and the
// write-back's urgent/deferred/sync rows; as JSON and as one log line.
nlohmann::json critical_path_json(const EpochResult& r);
std::string critical_path_text(const EpochResult& r);
// What a step costs in calls (EpochCalls): op calls (each a kernel launch on a GPU) and
// uploads per training step over `steps` (the step's own, then the side thread's), per
// evaluation batch when there were some, and with by_kind the step's op calls per step of
// each kind that ran.
nlohmann::json calls_json(const EpochCalls& calls, int64_t steps);
// {"host", "device"}: the most bytes the process's Buffers held at once so far.
nlohmann::json peak_bytes_json();
nlohmann::json epoch_json(const EpochResult& r);
// Appends one line to `file`; a runtime error naming the file when it cannot.
void append_json_line(const std::string& file, const nlohmann::json& line);
// Several lines in one open (an epoch's step losses).
void append_json_lines(const std::string& file, const std::vector<nlohmann::json>& lines);

}  // namespace depbloom::train
