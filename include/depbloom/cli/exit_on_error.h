// The command-line programs' outermost catch, written once: an Error logs its message and
// returns its kind's exit code (core/error.h); any other exception is a runtime error.
#pragma once

#include <spdlog/spdlog.h>

#include <exception>

#include "depbloom/core/error.h"

namespace depbloom::cli {

template <class Body>
int exit_on_error(Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    spdlog::error("{}", e.message());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return exit_code(ErrorKind::runtime);
  }
}

}  // namespace depbloom::cli
