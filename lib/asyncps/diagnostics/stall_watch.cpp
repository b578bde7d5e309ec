// defines: StallWatch
#include "asyncps/stall_watch.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <mutex>
#include <sstream>
#include <thread>

#include "asyncps/error.h"
#include "asyncps/log.h"
#include "transport/mpi_implementation.h"
#include "core/number_text.h"

namespace asyncps {

namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string seconds(double s) {
  std::ostringstream o;
  o.precision(2);
  o << std::fixed << s << " s";
  return o.str();
}

// The watcher: one per process, never destroyed (a detached thread may still look at it while
// the process exits).
struct Watcher {
  std::mutex mu;
  const StallWatch* current = nullptr;  // the innermost armed watch
  long long deadline_ns = 0;
  double timeout = 0;
  const std::string* what = nullptr;  // the current watch's (alive while it is armed)
  std::string who;  // "rank 1 on host-a", taken once MPI is up

  static Watcher& get() {
    static Watcher* w = [] {
      auto* p = new Watcher;
      std::thread([p] { p->run(); }).detach();
      return p;
    }();
    return *w;
  }

  // Looks ten times a second (nothing wakes it: arming and ending a watch cost no system call).
  void run() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard lock(mu);
      if (current && now_ns() > deadline_ns) fire();  // never returns
    }
  }

  [[noreturn]] void fire() {
    const std::string line = (who.empty() ? std::string() : who + ": ") + *what + " has made no progress for " +
                             seconds(timeout) + ": a rank stopped, or something it waits on never answers; ending the job";
    try {
      log(LogLevel::Error, line);
    } catch (...) {
      std::fprintf(stderr, "asyncps: %s\n", line.c_str());
    }
    // MPI_Abort ends every rank; the alarm (default action: terminate) ends this one should
    // MPI_Abort itself wait on the stuck thread.
    ::alarm(5);
    detail::abort_world(1);
  }
};

std::string describe_self() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return {};
  int rank = 0, len = 0;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Get_processor_name(host, &len);
  return "rank " + std::to_string(rank) + " on " + host;
}

}  // namespace

double watch_timeout(double stall_timeout) noexcept {
  return stall_timeout > 0 ? stall_timeout + std::max(2.0, stall_timeout / 2) : 0;
}

double setup_watch_timeout(double stall_timeout) noexcept {
  return stall_timeout > 0 ? std::max(watch_timeout(stall_timeout), kSetupWatchFloor) : 0;
}

StallWatch::StallWatch(double timeout, std::string what)
    : timeout_(timeout), owned_(std::move(what)), what_(&owned_) {
  if (!(timeout >= 0)) throw ConfigError("StallWatch: timeout must be >= 0 seconds (0: off), got " + detail::number_text(timeout));
  arm();
}

StallWatch::StallWatch(double timeout, const std::string& what, Borrowed) noexcept : timeout_(timeout), what_(&what) {
  arm();
}

void StallWatch::arm() noexcept {
  if (!(std::isfinite(timeout_) && timeout_ > 0)) return;
  Watcher& w = Watcher::get();
  deadline_ns_ = now_ns() + static_cast<long long>(std::min(timeout_, 1e9) * 1e9);
  std::lock_guard lock(w.mu);
  if (w.who.empty()) try {
      w.who = describe_self();
    } catch (...) {
    }
  outer_ = w.current;
  w.current = this;
  w.deadline_ns = deadline_ns_;
  w.timeout = timeout_;
  w.what = what_;
}

StallWatch::~StallWatch() {
  if (!deadline_ns_) return;
  Watcher& w = Watcher::get();
  std::lock_guard lock(w.mu);
  if (w.current != this) return;  // (not the innermost: ended out of order, nothing to restore)
  w.current = outer_;
  if (outer_) {
    w.deadline_ns = outer_->deadline_ns_;
    w.timeout = outer_->timeout_;
    w.what = outer_->what_;
  }
}

}  // namespace asyncps
