// depbloom-train: the trainer's command line (cli::run_train parses it and runs the job).
#include "depbloom/cli/app.h"

int main(int argc, char** argv) {
  return depbloom::cli::run_train(argc, argv);
}
