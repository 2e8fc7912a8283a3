// The depbloom-train application: parses the command line, sets up logging and runs.
#pragma once

namespace depbloom::cli {

// Returns the process exit code: 0 success, 2 usage/config, 3 data, 4 runtime.
int run_train(int argc, char** argv);

}  // namespace depbloom::cli
