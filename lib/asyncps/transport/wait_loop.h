// defines: asyncps::detail::WaitLoop, WaitPace, WaitMode, WaitHooks, kBurstAfterWake
// The one loop by which a rank waits for MPI to complete something of its own without holding a
// core it may share with the rank it waits for: a server while it serves the workers' one-sided
// operations (ProgressEngine, until the shutdown barrier completes), a worker for its requests
// (RequestWaiter), any rank for a non-blocking collective (wait_sleeping). Three paces:
//   Spin  enter MPI without pause (shared memory: the answer is microseconds away)
//   Poll  enter MPI, then sleep a fixed time (nothing wakes this rank; a bound is all it needs)
//   Wake  enter MPI for `spin_us`, then sleep in poll(2) on the process's sockets until bytes
//         arrive (SocketWaiter), at most `max_sleep_us` at a time, starting short and doubling
//         (MPI may complete work on later entries with no new bytes to wake anyone); after each
//         wake-up enter MPI `burst` times (Open MPI completes what arrived over several entries)
//         and keep entering it for `spin_after_wake_us` while bytes keep arriving.
// The owner enters MPI (`test`) and is told what happens (WaitHooks): its own bookkeeping —
// heartbeats, stall checks, checkpoint ticks, timeline spans — stays its own.
#pragma once
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <thread>

#include "transport/socket_waiter.h"

namespace asyncps::detail {

// Entries into MPI right after a wake-up: Open MPI completes what arrived (and sends the
// replies) over several entries, and no socket wakes anyone for that (1 entry: most steps waited
// for the next timeout; 16: none did). Used by the server and by waiting workers alike.
inline constexpr int kBurstAfterWake = 16;

enum class WaitMode { Spin, Poll, Wake };

struct WaitPace {
  WaitMode mode = WaitMode::Wake;
  int spin_us = 0;             // Wake: keep entering MPI this long before the first sleep
  int spin_after_wake_us = 0;  // Wake: and this long after each arrival (bytes keep it going)
  int max_sleep_us = 1000;     // Poll: every sleep; Wake: the longest sleep
  int first_sleep_us = kFirstBackoffUs / 2;       // Wake: the first sleep's bound (then doubling)
  int sleep_after_wake_us = kFirstBackoffUs / 2;  // Wake: the bound right after a wake-up
  int burst = kBurstAfterWake;                    // Wake: entries into MPI after each wake-up
  bool yield_without_sockets = false;  // Wake with no socket to watch: yield the core (else sleep)
  int spin_check_every = 4096;         // Spin: entries into MPI between two rounds of the hooks
};

// What the loop tells its owner; derive and hide what you need (the loop calls them statically).
struct WaitHooks {
  using Clock = std::chrono::steady_clock;
  // Once a round that did not complete (Spin: every spin_check_every entries); may throw to end
  // the wait. Returns the longest the next sleep may last, in microseconds.
  int round(Clock::time_point /*now*/) { return INT_MAX; }
  void woke(Clock::time_point /*now*/) {}  // a sleep ended by bytes arriving
  void burst_done() {}                     // the entries after that wake-up are done
  void quiet() {}                          // a sleep ended with nothing arrived
};

class WaitLoop {
 public:
  using Clock = std::chrono::steady_clock;
  WaitLoop() = default;
  explicit WaitLoop(WaitPace pace) : pace_(pace) {}
  const WaitPace& pace() const noexcept { return pace_; }
  // Reads the process's sockets now (else the first sleep does).
  void rescan() {
    sockets_.rescan();
    last_scan_ = Clock::now();
  }
  std::size_t sockets() const noexcept { return sockets_.sockets(); }

  // Enters MPI through `test` (true: what the rank waits for is complete) until it completes.
  template <class Test, class Hooks>
  void run(Test&& test, Hooks& hooks);

 private:
  static void sleep_us(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }
  WaitPace pace_;
  SocketWaiter sockets_;
  Clock::time_point last_scan_{};  // (zero: the first sleep scans)
};

template <class Test, class Hooks>
void WaitLoop::run(Test&& test, Hooks& hooks) {
  using us = std::chrono::microseconds;
  if (pace_.mode == WaitMode::Spin) {
    for (unsigned i = 1;; ++i) {
      if (test()) return;
      if (i % static_cast<unsigned>(pace_.spin_check_every) == 0) hooks.round(Clock::now());
    }
  }
  if (pace_.mode == WaitMode::Poll) {
    for (;;) {
      if (test()) return;
      hooks.round(Clock::now());
      sleep_us(pace_.max_sleep_us);
    }
  }
  auto spin_until = Clock::now() + us(pace_.spin_us);
  int backoff_us = std::min(pace_.first_sleep_us, pace_.max_sleep_us);
  for (;;) {
    if (test()) return;
    auto now = Clock::now();
    const int bound = hooks.round(now);
    if (now < spin_until) {  // operations are arriving (or the first spin): look again at once
      if (pace_.spin_after_wake_us > 0 && sockets_.wait(0)) spin_until = now + us(pace_.spin_after_wake_us);
      continue;
    }
    if (now - last_scan_ >= kSocketRescanEvery) {  // (and at once after a new connection)
      sockets_.rescan();
      last_scan_ = now;
    }
    const int sleep = std::clamp(bound, 0, std::min(backoff_us, pace_.max_sleep_us));
    if (!sockets_.usable()) {
      if (pace_.yield_without_sockets)
        std::this_thread::yield();
      else
        sleep_us(sleep);
      continue;
    }
    if (!sockets_.wait(sleep)) {  // nothing arrived: the next sleep may be longer
      backoff_us = std::min(2 * backoff_us, pace_.max_sleep_us);
      hooks.quiet();
      continue;
    }
    now = Clock::now();
    hooks.woke(now);
    spin_until = now + us(pace_.spin_after_wake_us);
    backoff_us = std::min(pace_.sleep_after_wake_us, pace_.max_sleep_us);
    bool done = false;
    for (int i = 0; i < pace_.burst && !done; ++i) done = test();
    hooks.burst_done();
    if (sockets_.connection_pending()) last_scan_ = Clock::time_point{};  // watch the new connection
    if (done) return;
  }
}

}  // namespace asyncps::detail
