// Error construction and the exit-code table.
#include "depbloom/core/error.h"

namespace depbloom {
namespace {
std::string compose(const std::string& message, const char* file, int line, const char* expr) {
  std::string out = message;
  if (expr != nullptr && expr[0] != '\0') out += fmt::format(" [check `{}`]", expr);
  if (file != nullptr) out += fmt::format(" ({}:{})", file, line);
  return out;
}
}  // namespace

Error::Error(ErrorKind kind, std::string message, const char* file, int line, const char* expr)
    : std::runtime_error(compose(message, file, line, expr)),
      kind_(kind),
      message_(std::move(message)),
      file_(file),
      line_(line),
      expr_(expr) {}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
    case ErrorKind::config:
      return 2;
    case ErrorKind::data:
      return 3;
    case ErrorKind::runtime:
      return 4;
  }
  return 4;
}

void throw_error(ErrorKind kind, const char* file, int line, const char* expr,
                 const std::string& message) {
  throw Error(kind, message, file, line, expr);
}

}  // namespace depbloom
