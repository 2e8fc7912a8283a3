// The depbloom-train application: parses the command line, sets up logging and runs.
#pragma once

namespace depbloom::cli {

// Returns the process exit code: 0 success, 2 usage/config, 3 data, 4 runtime (also a rank
// that timed out waiting for a hung peer). A stop signal ends the process with 128 + signal
// (130 for SIGINT) from its handler, and --ranks P returns the same after mpirun has ended.
int run_train(int argc, char** argv);

}  // namespace depbloom::cli
