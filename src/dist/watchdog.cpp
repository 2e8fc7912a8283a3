// The collective watchdog's thread (see watchdog.h for why it exists).
#include "depbloom/dist/watchdog.h"

#include <algorithm>
#include <utility>

#include "depbloom/core/error.h"

namespace depbloom::dist {

namespace {
using Clock = std::chrono::steady_clock;
}

Watchdog::Watchdog(double timeout_s, Expire on_expire)
    : timeout_s_(timeout_s), on_expire_(std::move(on_expire)) {
  DB_ASSERT(timeout_s > 0, "watchdog timeout must be positive, got {}", timeout_s);
  // A tenth of the timeout keeps the report within 10% of it; never more than a second
  // (long timeouts still report promptly), never below a millisecond (no busy loop).
  const double poll_s = std::clamp(timeout_s / 10.0, 1e-3, 1.0);
  poll_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(poll_s));
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Watchdog::arm(const char* what, int64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  what_ = what;
  seq_ = seq;
  since_ = Clock::now();
  armed_ = true;
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = false;
}

void Watchdog::set_probe(Probe probe) {
  std::lock_guard<std::mutex> lock(mu_);
  probe_ = std::move(probe);
}

bool Watchdog::device_overdue(Unfinished* oldest, double* waited) {
  if (!probe_ || !probe_(oldest)) return false;
  *waited = std::chrono::duration<double>(Clock::now() - oldest->since).count();
  return *waited >= timeout_s_;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, poll_);
    if (stop_) continue;
    // Still holding the lock when calling on_expire: the watched thread cannot return from
    // its collective and tear down the communicator that on_expire is about to use.
    Unfinished oldest;
    double waited = 0;
    if (device_overdue(&oldest, &waited)) {
      probe_ = nullptr;  // reported once, as a host wait is
      on_expire_(oldest.what, oldest.seq, waited);
      continue;
    }
    if (!armed_) continue;
    waited = std::chrono::duration<double>(Clock::now() - since_).count();
    if (waited < timeout_s_) continue;
    armed_ = false;
    on_expire_(what_, seq_, waited);
  }
}

}  // namespace depbloom::dist
