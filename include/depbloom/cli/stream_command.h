// depbloom-stream: streaming inference from a depbloom-train checkpoint (docs/streaming.md).
// Event and query lines from a file or standard input, applied in batches by a
// StreamSession; one answer line per query on standard output, log lines on standard error.
#pragma once

namespace depbloom::cli {

// The executable's main: exit 0 at the input's end, 143 on SIGTERM (130 on SIGINT) after
// applying what was read, 2/3/4 for usage or config, data and runtime errors.
int run_stream(int argc, char** argv);

}  // namespace depbloom::cli
