// Errors as exceptions that carry where they were raised, the failing expression and the
// library's own message, plus the kind of failure that decides the process exit code.
// Library code throws; only `main` catches, prints one line and returns the exit code.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace depbloom {

// The kind maps to documented exit codes (see exit_code()).
enum class ErrorKind { usage, config, data, runtime };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, const char* file = nullptr, int line = 0,
        const char* expr = nullptr);

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const char* file() const { return file_; }
  int line() const { return line_; }
  const char* expression() const { return expr_; }

 private:
  ErrorKind kind_;
  std::string message_;
  const char* file_;
  int line_;
  const char* expr_;
};

// 0 success, 2 usage or config error, 3 data error, 4 runtime error.
int exit_code(ErrorKind kind);

[[noreturn]] void throw_error(ErrorKind kind, const char* file, int line, const char* expr,
                              const std::string& message);

}  // namespace depbloom

// Always-on precondition check (kept in Release builds). The message is a fmt format string.
#define DB_ASSERT(cond, ...)                                                             \
  do {                                                                                   \
    if (!(cond)) [[unlikely]]                                                            \
      ::depbloom::throw_error(::depbloom::ErrorKind::runtime, __FILE__, __LINE__, #cond, \
                              ::fmt::format(__VA_ARGS__));                               \
  } while (0)

// Raise an error of a given kind with a formatted message.
#define DB_THROW(kind, ...)                                                         \
  ::depbloom::throw_error(::depbloom::ErrorKind::kind, __FILE__, __LINE__, nullptr, \
                          ::fmt::format(__VA_ARGS__))
