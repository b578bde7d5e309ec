// defines: RequestWaiter, wait_sleeping
#include "transport/request_waiter.h"

#include "core/check.h"

namespace asyncps::detail {

namespace {
using Clock = std::chrono::steady_clock;

WaitPace worker_pace(bool sleep_on_sockets, int spin_us, int max_sleep_us) {
  if (!sleep_on_sockets) return WaitPace{WaitMode::Spin};
  WaitPace p;
  p.mode = WaitMode::Wake;
  p.spin_us = spin_us;
  p.max_sleep_us = max_sleep_us;
  p.first_sleep_us = p.sleep_after_wake_us = kFirstBackoffUs / 2;
  p.yield_without_sockets = true;  // the reply may come over shared memory: look again soon
  return p;
}

}  // namespace

RequestWaiter::RequestWaiter(bool sleep_on_sockets, int spin_us, int max_sleep_us)
    : loop_(worker_pace(sleep_on_sockets, spin_us, max_sleep_us)) {}

// A waiting worker is alive: it beats (so server 0 names the rank it waits for, not it), and
// gives up once the wait has outlasted the timeout and its grace.
void RequestWaiter::check_stall(Clock::time_point since) const {
  if (watch_) watch_->beat();
  if (watch_) watch_->check_wait(std::chrono::duration<double>(Clock::now() - since).count(), whom_);
}

void RequestWaiter::wait_all(MPI_Request* reqs, int n) {
  if (n == 0) return;
  const bool spin = loop_.pace().mode == WaitMode::Spin;
  if (spin && (!watch_ || !watch_->watching())) {  // nothing to look at while it spins
    ASYNCPS_MPI_CHECK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
    return;
  }
  // past its first spin, every round of a waiting worker is a heartbeat and a look at how long
  // it has waited
  struct Hooks : WaitHooks {
    const RequestWaiter* self;
    Clock::time_point t0, spun;
    int round(Clock::time_point now) {
      if (now >= spun) self->check_stall(t0);
      return INT_MAX;
    }
  } hooks;
  hooks.self = this;
  hooks.t0 = Clock::now();
  hooks.spun = spin ? hooks.t0 : hooks.t0 + std::chrono::microseconds(loop_.pace().spin_us);
  loop_.run(
      [&] {
        int done = 0;
        ASYNCPS_MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
        return done != 0;
      },
      hooks);
}

void wait_sleeping(MPI_Request& request, int poll_us, const std::function<void()>& each_round) {
  struct Hooks : WaitHooks {
    const std::function<void()>* each;
    int round(Clock::time_point) {
      if (*each) (*each)();
      return INT_MAX;
    }
  } hooks;
  hooks.each = &each_round;
  WaitPace pace{WaitMode::Poll};
  pace.max_sleep_us = poll_us;
  WaitLoop loop(pace);
  loop.run(
      [&] {
        int done = 0;
        ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
        return done != 0;
      },
      hooks);
}

}  // namespace asyncps::detail
