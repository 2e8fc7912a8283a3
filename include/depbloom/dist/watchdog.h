// Watchdog: bounds how long one thread may wait in a collective. A rank that stops making
// progress (stuck in a loop, blocked, stopped) never joins the next collective, and every
// other rank would wait in it forever: no error is ever raised, because nothing failed.
// Only a clock can tell, so a background thread watches the one wait in progress and, when
// it has lasted the timeout, calls `on_expire` (the communicator's: print, then abort every
// rank). Arming and disarming are a lock and two stores, cheap enough for every collective.
// Collectives a GPU runs after the call that queued them returned (NCCL) are watched through
// a probe instead: the host's wait for them happens later, wherever it next waits on the stream.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace depbloom::dist {

class Watchdog {
 public:
  // what: the collective's name (a string literal); seq: its number on this rank; waited_s:
  // how long it has waited. Called on the watchdog thread, with the watched thread unable to
  // leave its wait meanwhile (disarm() blocks), so what it uses stays alive. Meant not to
  // return; if it does, that wait is not reported again.
  using Expire = std::function<void(const char* what, int64_t seq, double waited_s)>;

  // timeout_s > 0. The thread checks a few times per timeout (at most once a second), so a
  // wait is reported between timeout_s and timeout_s plus one check later.
  Watchdog(double timeout_s, Expire on_expire);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  double timeout() const { return timeout_s_; }

  // The oldest collective queued on a device and not yet finished there.
  struct Unfinished {
    const char* what = "";
    int64_t seq = 0;
    std::chrono::steady_clock::time_point since;
  };
  // Polled at every check on the watchdog thread, under the watchdog's lock (so it must not
  // block): fills in the oldest unfinished device collective and returns true, or returns
  // false when there is none. One that waited the timeout is reported as a wait would be.
  using Probe = std::function<bool(Unfinished* oldest)>;
  // Once, on the owner's thread; the owner destroys the watchdog before what the probe uses.
  void set_probe(Probe probe);
  // One wait at a time (a communicator is used by one thread).
  void arm(const char* what, int64_t seq);
  void disarm();

  // arm() for the scope's lifetime; a null watchdog watches nothing.
  class Scope {
   public:
    Scope(Watchdog* w, const char* what, int64_t seq) : w_(w) {
      if (w_ != nullptr) w_->arm(what, seq);
    }
    ~Scope() {
      if (w_ != nullptr) w_->disarm();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog* w_;
  };

 private:
  void loop();
  // The probe's oldest collective, when it waited the timeout (under the lock).
  bool device_overdue(Unfinished* oldest, double* waited);

  const double timeout_s_;
  const Expire on_expire_;
  std::chrono::steady_clock::duration poll_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool armed_ = false;
  const char* what_ = "";
  int64_t seq_ = 0;
  std::chrono::steady_clock::time_point since_;
  Probe probe_;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace depbloom::dist
