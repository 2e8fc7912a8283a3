// depbloom-embed: a checkpoint's node memory at a time, as .npy files (cli::run_embed).
#include "depbloom/cli/embed_command.h"

int main(int argc, char** argv) {
  return depbloom::cli::run_embed(argc, argv);
}
