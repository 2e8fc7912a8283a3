// depbloom-stream's command line and input loop: lines read from a file (optionally followed
// as it grows) or standard input, handed to a StreamSession; a part batch applied when it
// waited stream.max_delay_ms; SIGTERM and SIGINT end the loop after applying what was read.
#include "depbloom/cli/stream_command.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "depbloom/backend/runtime.h"
#include "depbloom/cli/exit_on_error.h"
#include "depbloom/cli/stream_session.h"
#include "depbloom/core/error.h"

namespace depbloom::cli {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
}

// Without SA_RESTART, so that a blocked poll or read returns at once.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

struct StreamRequest {
  std::string checkpoint, input = "-", checkpoint_out, data;
  std::vector<std::string> sets;
  bool follow = false;
  int64_t threads = 0;
};

// The input loop: whole lines to the session (a rejected one logged), part batches applied
// when due; returns at the end of the input or on a stop signal.
class InputLoop {
 public:
  InputLoop(StreamSession& session, int fd, bool follow)
      : session_(session), fd_(fd), follow_(follow) {}

  void run() {
    char chunk[1 << 16];
    while (g_signal == 0) {
      if (!wait_readable()) continue;
      const ssize_t n = ::read(fd_, chunk, sizeof(chunk));
      if (n < 0) {
        if (errno == EINTR) continue;
        DB_THROW(runtime, "reading the input: {}", std::strerror(errno));
      }
      if (n == 0) {
        if (!follow_) break;
        // A followed file: wait for it to grow, or for the pending batch to be due.
        const int due = due_in_ms();
        ::poll(nullptr, 0, due < 0 ? 50 : std::min(50, due));
        apply_if_due();
        continue;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
      take_lines();
      apply_if_due();
    }
    // A last line without a newline counts at the input's end, not when a signal cut it.
    if (g_signal == 0 && !buffer_.empty()) take(buffer_);
    if (g_signal != 0 && !buffer_.empty())
      spdlog::warn("line {}: incomplete when the signal came; not applied", line_ + 1);
    buffer_.clear();
  }

 private:
  // Milliseconds until the pending part batch is due (-1: none is pending or no delay).
  int due_in_ms() const {
    const int64_t delay = session_.config().stream.max_delay_ms;
    if (delay <= 0 || !session_.has_pending()) return -1;
    const auto due = session_.first_pending_at() + std::chrono::milliseconds(delay);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(due - StreamClock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }

  // Waits for input until the pending part batch is due; false when nothing came.
  bool wait_readable() {
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, due_in_ms());
    if (r < 0 && errno != EINTR) DB_THROW(runtime, "waiting for input: {}", std::strerror(errno));
    if (r == 0) apply_if_due();
    return r > 0;
  }

  void apply_if_due() {
    const int64_t delay = session_.config().stream.max_delay_ms;
    if (delay <= 0 || !session_.has_pending()) return;
    if (StreamClock::now() - session_.first_pending_at() >= std::chrono::milliseconds(delay)) {
      session_.flush();
      std::fflush(stdout);
    }
  }

  void take_lines() {
    size_t start = 0;
    for (size_t nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n', start)) {
      take(buffer_.substr(start, nl - start));
      start = nl + 1;
    }
    buffer_.erase(0, start);
    std::fflush(stdout);
  }

  void take(const std::string& text) {
    ++line_;
    try {
      session_.add_line(text, line_, StreamClock::now());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::data) throw;
      spdlog::error("{}", e.message());
    }
  }

  StreamSession& session_;
  int fd_;
  bool follow_;
  std::string buffer_;
  int64_t line_ = 0;
};

void report(const StreamSession& session, double seconds) {
  const StreamStats& s = session.stats();
  const double p50 = s.latency.quantile(0.50) * 1e3;
  const double p99 = s.latency.quantile(0.99) * 1e3;
  spdlog::info(
      "depbloom-stream: {} events applied in {} batches ({} one-pass) in {:.3f} s: {:.0f} "
      "events/s; {} queries answered, latency p50 {:.3f} ms, p99 {:.3f} ms; {} lines "
      "rejected; {} new nodes",
      s.events, s.batches, s.one_pass_batches, seconds,
      seconds > 0 ? static_cast<double>(s.events) / seconds : 0.0, s.queries, p50, p99, s.rejected,
      s.new_nodes);
}

int stream(const StreamRequest& req) {
  if (req.threads > 0) backend::set_cpu_threads(static_cast<int>(req.threads));
  StreamSession session(req.checkpoint, req.data, req.sets);
  session.set_sink([](const StreamAnswer& a) {
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(a.logit)));
    std::fputs(fmt::format("{},{:.9g},{:.9g}\n", a.line, a.logit, p).c_str(), stdout);
  });
  const int fd = req.input == "-" ? 0 : ::open(req.input.c_str(), O_RDONLY);
  if (fd < 0) DB_THROW(data, "{}: cannot open: {}", req.input, std::strerror(errno));
  spdlog::info(
      "depbloom-stream: {} loaded events (before the test split), batches of {}; "
      "reading {}",
      session.loaded_events(), session.config().stream.batch_size,
      req.input == "-" ? std::string("standard input") : req.input);
  const StreamClock::time_point start = StreamClock::now();
  InputLoop(session, fd, req.follow).run();
  if (fd != 0) ::close(fd);
  if (g_signal != 0) spdlog::info("depbloom-stream: signal {}: applying what was read", g_signal);
  session.flush();
  std::fflush(stdout);
  report(session, std::chrono::duration<double>(StreamClock::now() - start).count());
  if (!req.checkpoint_out.empty()) {
    session.save_checkpoint(req.checkpoint_out);
    spdlog::info("depbloom-stream: updated state written to {}", req.checkpoint_out);
  }
  if (g_signal == SIGTERM) return 128 + SIGTERM;
  if (g_signal == SIGINT) return 128 + SIGINT;
  return 0;
}

}  // namespace

int run_stream(int argc, char** argv) {
  CLI::App app{"depbloom-stream: a checkpoint's link scores over a live event stream"};
  StreamRequest req;
  app.add_option("checkpoint", req.checkpoint, "a depbloom-train checkpoint (.ckpt)")->required();
  app.add_option("--input", req.input, "file of event and query lines, - for standard input");
  app.add_flag("--follow", req.follow,
               "at the end of --input, wait for the file to grow (until SIGTERM)");
  app.add_option("--checkpoint-out", req.checkpoint_out,
                 "at the end (input end or SIGTERM), write the updated model state here");
  app.add_option("--data", req.data, "the loaded stream (default: the checkpoint's data.path)");
  app.add_option("--set", req.sets, "override one key, e.g. --set stream.batch_size=100");
  app.add_option("--threads", req.threads, "CPU threads, 0 = all cores");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : exit_code(ErrorKind::usage);
  }
  // Standard output carries the answers only.
  spdlog::set_default_logger(spdlog::stderr_color_mt("depbloom-stream"));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  install_stop_handlers();
  return exit_on_error([&] { return stream(req); });
}

}  // namespace depbloom::cli
