// defines: ProgressEngine
#include "server/progress_engine.h"

#include <algorithm>
#include <thread>

#include "core/check.h"
#include "diagnostics/timeline.h"

namespace asyncps::detail {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

ProgressEngine::ProgressEngine(ProgressConfig config, Timeline* timeline) : config_(config), timeline_(timeline) {
  if (config_.wake_on_sockets) waiter_.rescan();
}

void ProgressEngine::run_until(MPI_Request& request, const std::function<void()>& each_tick) {
  auto last_tick = Clock::now(), last_scan = last_tick;
  Clock::time_point busy_until{};  // wake mode: keep entering MPI until then (spin_us)
  Clock::time_point busy_since{}, busy_end{};  // the current active period (timeline span)
  bool busy = false;
  int backoff_us = config_.poll_us;  // the next sleep's bound: short right after activity
  int done = 0;
  for (;;) {
    const bool poll_span = !config_.wake_on_sockets && timeline_ && timeline_->enabled();
    const auto entered = poll_span ? Clock::now() : Clock::time_point{};
    ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));  // enters the progress engine
    ++stats_.rounds;
    auto now = Clock::now();
    if (done) {
      if (busy && timeline_) timeline_->span("serve", busy_since, busy_end);
      return;
    }
    if (each_tick && now - last_tick >= std::chrono::microseconds(config_.tick_us)) {
      each_tick();
      last_tick = now;
    }
    if (!config_.wake_on_sockets) {
      if (poll_span) timeline_->span("serve (poll)", entered, Clock::now());
      std::this_thread::sleep_for(std::chrono::microseconds(config_.poll_us));
      continue;
    }
    if (now < busy_until) {  // operations are arriving: look again at once
      if (waiter_.wait(0)) busy_until = now + std::chrono::microseconds(config_.spin_us);
      continue;
    }
    if (now - last_scan >= kSocketRescanEvery) {  // (and at once after a new connection)
      waiter_.rescan();
      last_scan = now;
    }
    const auto to_tick = std::chrono::duration_cast<std::chrono::microseconds>(
        last_tick + std::chrono::microseconds(config_.tick_us) - now);
    const int sleep_us = std::clamp(static_cast<int>(to_tick.count()), 0, std::min(backoff_us, config_.poll_us));
    if (!waiter_.usable()) {
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      continue;
    }
    if (!waiter_.wait(sleep_us)) {
      // Nothing arrived. Open MPI may still hold work it completes only on later entries
      // (nothing wakes us for that): the sleeps after activity start short and double.
      backoff_us = std::min(2 * backoff_us, config_.poll_us);
      if (busy) {  // the active period ended when the last burst did
        busy = false;
        if (timeline_) timeline_->span("serve", busy_since, busy_end);
      }
      continue;
    }
    ++stats_.wakeups;
    now = Clock::now();
    if (!busy) busy_since = now;
    busy = true;
    busy_until = now + std::chrono::microseconds(config_.spin_us);
    backoff_us = kFirstBackoffUs;
    // the burst after a wake-up (kBurstAfterWake)
    for (int i = 0; i < config_.burst; ++i) {
      ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      ++stats_.rounds;
      if (done) break;
    }
    busy_end = Clock::now();
    if (waiter_.connection_pending()) last_scan = Clock::time_point{};  // watch the new connection
  }
}

}  // namespace asyncps::detail
