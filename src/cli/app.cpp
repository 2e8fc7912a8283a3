// depbloom-train (placeholder until the smoke job lands).
#include "depbloom/cli/app.h"

namespace depbloom::cli {
int run_train(int /*argc*/, char** /*argv*/) { return 0; }
}  // namespace depbloom::cli
