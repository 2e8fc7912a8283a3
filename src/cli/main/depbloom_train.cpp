// depbloom-train: the trainer's command line. Until the models land (issue 5) it runs a
// smoke job over the backend so that the quick-start command already works end to end.
#include <cstdio>

#include "depbloom/cli/app.h"

int main(int argc, char** argv) {
  return depbloom::cli::run_train(argc, argv);
}
