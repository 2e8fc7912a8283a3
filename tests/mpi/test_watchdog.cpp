// The collective watchdog (label unit, no mpirun): it reports a wait that outlasts the
// timeout once, with its name and number, never one that ends in time or an idle
// communicator; a communicator with a timeout turns a peer that never arrives into abort()
// with the timeout's exit code and a message naming the rank and the collective; a lone
// rank gets no watchdog; an unfinished device collective is reported through the probe.
// Timeouts are short, and the limits waited on generous, so that a loaded machine passes too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "depbloom/core/error.h"
#include "depbloom/dist/local_communicator.h"
#include "depbloom/dist/watchdog.h"
#include "dist/backends.h"

namespace {

using depbloom::Device;
using depbloom::Tensor;
using depbloom::dist::CommHandle;
using depbloom::dist::Communicator;
using depbloom::dist::ReduceOp;
using depbloom::dist::Watchdog;
using namespace std::chrono_literals;

// Waits up to `limit` for `done`.
template <class F>
bool eventually(F done, std::chrono::seconds limit = 20s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Device-side collectives (NCCL): the probe names the oldest unfinished one; it is reported
// once it has been unfinished for the timeout, with no thread waiting in a collective, and one
// that finishes in time never is.
TEST(Watchdog, ReportsAnUnfinishedDeviceCollectiveThroughTheProbe) {
  std::atomic<int> reports{0};
  std::string what;
  int64_t seq = 0;
  Watchdog w(0.05, [&](const char* wh, int64_t s, double) {
    what = wh;
    seq = s;
    reports.fetch_add(1);
  });
  const auto queued = std::chrono::steady_clock::now();
  w.set_probe([&](Watchdog::Unfinished* oldest) {
    oldest->what = "all_reduce (queued on the GPU)";
    oldest->seq = 12;
    oldest->since = queued;
    return true;
  });
  ASSERT_TRUE(eventually([&] { return reports.load() > 0; }));
  std::this_thread::sleep_for(200ms);  // the probe is dropped once it reported
  EXPECT_EQ(reports.load(), 1);
  EXPECT_EQ(what, "all_reduce (queued on the GPU)");
  EXPECT_EQ(seq, 12);

  Watchdog quiet(0.05, [&](const char*, int64_t, double) { reports.fetch_add(1); });
  quiet.set_probe([&](Watchdog::Unfinished*) { return false; });  // all finished
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(reports.load(), 1);
}

TEST(Watchdog, ReportsAWaitThatOutlastsTheTimeoutOnce) {
  std::atomic<int> reports{0};
  std::string what;
  int64_t seq = 0;
  double waited = 0;
  Watchdog w(0.05, [&](const char* wh, int64_t s, double wt) {
    what = wh;
    seq = s;
    waited = wt;
    reports.fetch_add(1);
  });
  EXPECT_DOUBLE_EQ(w.timeout(), 0.05);
  {
    Watchdog::Scope guard(&w, "all_reduce", 7);
    ASSERT_TRUE(eventually([&] { return reports.load() > 0; }));
    std::this_thread::sleep_for(200ms);  // still waiting: no second report
  }
  EXPECT_EQ(reports.load(), 1);
  EXPECT_EQ(what, "all_reduce");
  EXPECT_EQ(seq, 7);
  EXPECT_GE(waited, 0.05);
}

TEST(Watchdog, QuietForWaitsThatEndInTimeAndWhenIdle) {
  std::atomic<int> reports{0};
  Watchdog w(2.0, [&](const char*, int64_t, double) { reports.fetch_add(1); });
  for (int i = 0; i < 200; ++i) {
    Watchdog::Scope guard(&w, "barrier", i);
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(2500ms);  // idle (disarmed) longer than the timeout
  EXPECT_EQ(reports.load(), 0);
}

TEST(Watchdog, NullScopeWatchesNothing) {
  Watchdog::Scope guard(nullptr, "all_gather", 1);  // must not crash
  SUCCEED();
}

TEST(Watchdog, RejectsANonPositiveTimeout) {
  EXPECT_THROW(Watchdog(0.0, [](const char*, int64_t, double) {}), depbloom::Error);
}

TEST(CommunicatorTimeout, ALoneRankHasNone) {
  depbloom::dist::LocalCommunicator c;
  c.set_timeout(5);
  EXPECT_EQ(c.timeout(), 0.0);
  EXPECT_THROW(c.set_timeout(-1), depbloom::Error);
}

// Two "ranks" of which the other never arrives: every blocking call and handle wait blocks
// until released; abort() prints like the real ones and ends the process with its code.
class StuckPeerCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 2; }
  // Stands in for an MPI peer group.
  depbloom::dist::CommunicatorKind kind() const override {
    return depbloom::dist::CommunicatorKind::mpi;
  }
  Device device() const override { return Device::cpu(); }
  [[noreturn]] void abort(int code, const std::string& message) override {
    depbloom::dist::detail::print_rank_message(0, 2, message);
    std::_Exit(code);
  }

 protected:
  static void forever() {
    for (;;) std::this_thread::sleep_for(1h);
  }
  void do_all_reduce(const Tensor&, ReduceOp) override { forever(); }
  void do_all_gather(const Tensor&, const Tensor&) override { forever(); }
  void do_all_gather_v(const Tensor&, const Tensor&, const std::vector<int64_t>&) override {
    forever();
  }
  void do_broadcast(const Tensor&, int) override { forever(); }
  void do_barrier() override { forever(); }
  CommHandle do_iall_reduce(const Tensor&, ReduceOp) override { return CommHandle(); }
  CommHandle do_iall_gather_v(const Tensor&, const Tensor&, const std::vector<int64_t>&) override {
    return CommHandle();
  }
};

TEST(CommunicatorTimeoutDeathTest, AStuckPeerEndsTheRankWithTheTimeoutCode) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StuckPeerCommunicator c;
        c.set_timeout(0.2);
        float x = 1;
        c.all_reduce(Tensor::wrap(&x, depbloom::Shape(1)));
      },
      testing::ExitedWithCode(Communicator::kTimeoutExitCode),
      R"(\[rank 0/2\] timed out: waited [0-9.]+ s in all_reduce \(collective #1 on this rank\))");
}

}  // namespace
