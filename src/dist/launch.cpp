// The launcher that runs mpirun as its child and forwards stop signals to it, and the stop
// handlers of a rank (see launch.h for why a stop is immediate).
#include "depbloom/dist/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "depbloom/core/error.h"
#include "dist/backends.h"

namespace depbloom::dist {

namespace {

constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
  }
  return "a signal";
}

// ---- the launcher: state its handler shares with run_launcher ----

volatile sig_atomic_t g_child = 0;   // mpirun's pid once forked
volatile sig_atomic_t g_signal = 0;  // the first stop signal received

void forward_to_child(int sig) {
  const int saved = errno;
  if (g_signal == 0) g_signal = sig;
  // mpirun ends the job on SIGINT and SIGTERM alike (SIGTERM to every rank, SIGKILL after a
  // grace period); SIGHUP becomes SIGTERM, which every launcher understands.
  const pid_t child = static_cast<pid_t>(g_child);
  if (child > 0) ::kill(child, sig == SIGHUP ? SIGTERM : sig);
  errno = saved;
}

// ---- a rank: its prepared messages (a handler may not format or allocate) ----

struct StopMessage {
  char text[256] = {};
  size_t length = 0;
};
std::array<StopMessage, kStopSignals.size()> g_messages;
volatile sig_atomic_t g_quiet = 0;

void stop_now(int sig) {
  // A rank that is aborting has said why; the SIGTERM that mpirun's kill of the job sends it
  // too needs no line of its own.
  if (g_quiet == 0 && !detail::aborting()) {
    for (size_t i = 0; i < kStopSignals.size(); ++i) {
      if (kStopSignals[i] != sig) continue;
      ssize_t n = ::write(STDERR_FILENO, g_messages[i].text, g_messages[i].length);
      (void)n;
    }
  }
  ::_exit(128 + sig);
}

}  // namespace

namespace {

// The forked child: the launcher's own handling and mask (exec turns handlers into the
// default, ignored stays ignored), and SIGTERM should the launcher die (killed with SIGKILL
// it cannot forward anything), so that mpirun never outlives it; exec's errno goes to
// `report` when exec fails.
[[noreturn]] void exec_child(std::vector<char*>& argv,
                             const std::array<struct sigaction, kStopSignals.size()>& previous,
                             const sigset_t& old, pid_t parent, int report) {
  for (size_t i = 0; i < kStopSignals.size(); ++i)
    sigaction(kStopSignals[i], &previous[i], nullptr);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(128 + SIGTERM);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  ssize_t n = ::write(report, &err, sizeof err);
  (void)n;
  ::_exit(127);
}

}  // namespace

int run_launcher(const std::vector<std::string>& args, const std::string& who) {
  DB_ASSERT(!args.empty(), "run_launcher: no program to run");
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int report[2];  // the child writes exec's errno here; closed on a successful exec
  if (::pipe2(report, O_CLOEXEC) != 0)
    DB_THROW(runtime, "cannot start {}: pipe: {}", args[0], std::strerror(errno));

  // Stop signals are held back until the child's pid is known, so none is lost or left
  // unforwarded between fork and the handler seeing the pid.
  sigset_t stop;
  sigset_t old;
  sigemptyset(&stop);
  for (int s : kStopSignals) sigaddset(&stop, s);
  sigprocmask(SIG_BLOCK, &stop, &old);
  struct sigaction forward {};
  forward.sa_handler = forward_to_child;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  std::array<struct sigaction, kStopSignals.size()> previous{};
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], nullptr, &previous[i]);
    // An ignored signal stays ignored (nohup, a shell's background job), here and in mpirun.
    if (previous[i].sa_handler != SIG_IGN) sigaction(kStopSignals[i], &forward, nullptr);
  }
  auto restore = [&] {
    for (size_t i = 0; i < kStopSignals.size(); ++i)
      sigaction(kStopSignals[i], &previous[i], nullptr);
    sigprocmask(SIG_SETMASK, &old, nullptr);
  };

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(argv, previous, old, parent, report[1]);
  if (pid < 0) {
    const int err = errno;
    restore();
    ::close(report[0]);
    ::close(report[1]);
    DB_THROW(runtime, "cannot start {}: fork: {}", args[0], std::strerror(err));
  }
  g_child = static_cast<sig_atomic_t>(pid);
  sigprocmask(SIG_SETMASK, &old, nullptr);  // a held-back signal is forwarded now
  ::close(report[1]);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  const int sig = g_signal;
  restore();
  if (got == static_cast<ssize_t>(sizeof exec_errno))
    DB_THROW(usage, "cannot start {}: {}", args[0], std::strerror(exec_errno));
  if (sig != 0) {
    std::fprintf(stderr, "%s: stopped by %s; every rank has ended (exit %d)\n", who.c_str(),
                 signal_name(sig), 128 + sig);
    std::fflush(stderr);
    return 128 + sig;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void install_stop_handlers(const std::string& prefix, bool quiet) {
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    const int sig = kStopSignals[i];
    const int n =
        std::snprintf(g_messages[i].text, sizeof g_messages[i].text, "%sstopped by %s (exit %d)\n",
                      prefix.c_str(), signal_name(sig), 128 + sig);
    g_messages[i].length =
        n < 0 ? 0 : std::min(static_cast<size_t>(n), sizeof g_messages[i].text - 1);
  }
  g_quiet = quiet ? 1 : 0;
  struct sigaction sa {};
  sa.sa_handler = stop_now;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (int s : kStopSignals) {
    struct sigaction current {};
    sigaction(s, nullptr, &current);
    // An ignored signal stays ignored: nohup's SIGHUP, SIGINT in a shell's background job.
    if (current.sa_handler != SIG_IGN) sigaction(s, &sa, nullptr);
  }
}

}  // namespace depbloom::dist
