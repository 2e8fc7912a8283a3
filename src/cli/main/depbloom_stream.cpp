// depbloom-stream: streaming inference from a checkpoint (cli::run_stream).
#include "depbloom/cli/stream_command.h"

int main(int argc, char** argv) {
  return depbloom::cli::run_stream(argc, argv);
}
