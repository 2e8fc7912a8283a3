// Starting ranks and stopping them on a signal. `depbloom-train --ranks P` runs mpirun as
// its child (not by exec) so that it outlives it: it forwards SIGINT/SIGTERM/SIGHUP to
// mpirun (which ends every rank), waits for it and reports the signal as one line and the
// conventional exit status 128 + signal. Each rank, and a single-process run, ends at once
// on those signals with that status: nothing is lost that a clean stop would keep, since
// checkpoints are written to a temporary file and renamed, and an epoch is the smallest
// unit saved.
#pragma once

#include <string>
#include <vector>

namespace depbloom::dist {

// Set by run_launcher in mpirun's environment: the launcher reports a signal itself, so the
// ranks that mpirun then stops stay silent.
inline constexpr const char* kLauncherEnv = "DEPBLOOM_LAUNCHER";

// Runs `args` (args[0] is looked up in PATH) as a child and returns its exit status (128 +
// signal when a signal ended it). A SIGINT, SIGTERM or SIGHUP that this process receives
// meanwhile goes on to the child; once the child has ended, one line "<who>: stopped by
// SIGINT; ..." is printed and 128 + that signal returned. The child gets SIGTERM should
// this process die first. Throws (usage) when the program cannot be started.
int run_launcher(const std::vector<std::string>& args, const std::string& who);

// From now on SIGINT, SIGTERM and SIGHUP end this process at once with status 128 +
// signal, printing "<prefix>stopped by SIGINT (exit 130)" on stderr unless `quiet`.
void install_stop_handlers(const std::string& prefix, bool quiet);

}  // namespace depbloom::dist
