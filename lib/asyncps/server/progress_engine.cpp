// defines: ProgressEngine
#include "server/progress_engine.h"

#include <algorithm>

#include "core/check.h"
#include "diagnostics/timeline.h"

namespace asyncps::detail {

namespace {
using Clock = std::chrono::steady_clock;

WaitPace server_pace(const ProgressConfig& c) {
  WaitPace p;
  p.mode = c.wake_on_sockets ? WaitMode::Wake : WaitMode::Poll;
  p.spin_after_wake_us = c.spin_us;
  p.max_sleep_us = c.poll_us;
  p.first_sleep_us = c.poll_us;  // nothing has happened yet: the longest sleep
  p.sleep_after_wake_us = kFirstBackoffUs;
  p.burst = c.burst;
  return p;
}
}  // namespace

ProgressEngine::ProgressEngine(ProgressConfig config, Timeline* timeline)
    : config_(config), timeline_(timeline), loop_(server_pace(config)) {
  if (config_.wake_on_sockets) loop_.rescan();
}

void ProgressEngine::run_until(MPI_Request& request, const std::function<void()>& each_tick) {
  // The server's side of the loop: checkpoint ticks, its counts, and the timeline's spans ("serve"
  // for each active period: from the first wake-up to the end of the last burst; "serve (poll)"
  // for each entry of a poll).
  struct Hooks : WaitHooks {
    ProgressEngine* e;
    const std::function<void()>* each_tick;
    Clock::time_point last_tick, entered;
    Clock::time_point busy_since{}, busy_end{};
    bool busy = false, poll_span = false;

    int round(Clock::time_point now) {
      const auto tick = std::chrono::microseconds(e->config_.tick_us);
      if (*each_tick && now - last_tick >= tick) {
        (*each_tick)();
        last_tick = now;
      }
      if (poll_span) e->timeline_->span("serve (poll)", entered, Clock::now());
      if (!*each_tick) return INT_MAX;  // no tick to be on time for
      return static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(last_tick + tick - now).count());
    }
    void woke(Clock::time_point now) {
      ++e->stats_.wakeups;
      if (!busy) busy_since = now;
      busy = true;
    }
    void burst_done() { busy_end = Clock::now(); }
    void quiet() {  // the active period ended when the last burst did
      if (!busy) return;
      busy = false;
      if (e->timeline_) e->timeline_->span("serve", busy_since, busy_end);
    }
  } hooks;
  hooks.e = this;
  hooks.each_tick = &each_tick;
  hooks.last_tick = Clock::now();
  const bool poll = !config_.wake_on_sockets;
  loop_.run(
      [&] {
        hooks.poll_span = poll && timeline_ && timeline_->enabled();
        if (hooks.poll_span) hooks.entered = Clock::now();
        int done = 0;
        ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));  // enters the progress engine
        ++stats_.rounds;
        return done != 0;
      },
      hooks);
  hooks.quiet();
}

}  // namespace asyncps::detail
