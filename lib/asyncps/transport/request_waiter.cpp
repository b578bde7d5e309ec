// defines: RequestWaiter, wait_sleeping
#include "transport/request_waiter.h"

#include <algorithm>
#include <thread>

#include "core/check.h"

namespace asyncps::detail {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// A waiting worker is alive: it beats (so server 0 names the rank it waits for, not it), and
// gives up once the wait has outlasted the timeout and its grace.
void RequestWaiter::check_stall(Clock::time_point since) const {
  if (watch_) watch_->beat();
  if (watch_) watch_->check_wait(std::chrono::duration<double>(Clock::now() - since).count(), whom_);
}

void RequestWaiter::wait_all(MPI_Request* reqs, int n) {
  if (n == 0) return;
  int done = 0;
  if (!sleep_) {
    if (!watch_ || !watch_->watching()) {
      ASYNCPS_MPI_CHECK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
      return;
    }
    // the same spin as MPI_Waitall, with a look at the clock every 4096 tests
    const auto t0 = Clock::now();
    for (unsigned i = 1;; ++i) {
      ASYNCPS_MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
      if (done) return;
      if (i % 4096 == 0) check_stall(t0);
    }
  }
  const auto t0 = Clock::now();
  int backoff_us = std::min(kFirstBackoffUs / 2, max_sleep_us_);
  for (;;) {
    ASYNCPS_MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) return;
    const auto now = Clock::now();
    if (now - t0 < std::chrono::microseconds(spin_us_)) continue;
    check_stall(t0);
    if (now - last_scan_ >= kSocketRescanEvery) {  // (the first wait scans: last_scan_ starts at 0)
      sockets_.rescan();
      last_scan_ = now;
    }
    if (!sockets_.usable()) {
      std::this_thread::yield();
      continue;
    }
    // short sleeps first, doubling: a wake-up can be missed when MPI completes a request on a
    // later entry without new bytes arriving
    if (!sockets_.wait(backoff_us)) {
      backoff_us = std::min(2 * backoff_us, max_sleep_us_);
      continue;
    }
    backoff_us = std::min(kFirstBackoffUs / 2, max_sleep_us_);
    for (int i = 0; i < kBurstAfterWake && !done; ++i)
      ASYNCPS_MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    if (sockets_.connection_pending()) last_scan_ = std::chrono::steady_clock::time_point{};
    if (done) return;
  }
}

void wait_sleeping(MPI_Request& request, int poll_us, const std::function<void()>& each_round) {
  for (;;) {
    int done = 0;
    ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (each_round) each_round();
    std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
  }
}

}  // namespace asyncps::detail
