// defines: asyncps::StallWatch
// A deadline on a stretch of code that no heartbeat covers: start-up (reading data, the
// Session's collectives, window creation, the restore), a blocking MPI wait, the end-of-job
// collectives. If the stretch has not ended `timeout` seconds after it began, one line goes to
// the log sink and the job ends (MPI_Abort: every rank exits non-zero), instead of every rank
// waiting forever on one that is stuck (a FIFO in place of a data file, a hung file system, a
// rank that stopped inside a collective).
//
//   {
//     asyncps::StallWatch watch(asyncps::setup_watch_timeout(options.stall_timeout), "reading the training data");
//     data = load(...);
//   }  // no longer watched
//
// The library watches its own start-up, blocking waits and end with Options::stall_timeout.
// Watches nest (the innermost is the one in force; the outer one resumes when it ends). They
// belong to the thread that made them (the FUNNELED thread). Cost: a mutex and a clock read at
// each end; one background thread per process, sleeping, started by the first watch.
#pragma once
#include <string>

namespace asyncps {

// The deadline the library gives a watched stretch for Options::stall_timeout `t`: t plus a
// grace of max(2 s, t / 2), so that where heartbeats can name the silent rank (server 0 knows
// which worker stopped) they report first. 0 (off) stays 0.
double watch_timeout(double stall_timeout) noexcept;

// The deadline of a set-up stretch (the Session's start-up, creating and restoring the windows,
// reading the training data, a GPU's first use): watch_timeout(t), but at least
// kSetupWatchFloor seconds. Such work scales with the data, the disk and the machine, not with a
// training step, so a stall timeout chosen for steps (the floor is 0.5 s) would end a healthy
// job that is merely loading. 0 (off) stays 0.
inline constexpr double kSetupWatchFloor = 10.0;
double setup_watch_timeout(double stall_timeout) noexcept;

class StallWatch {
 public:
  // timeout in seconds, 0: this watch never fires (a negative or NaN one throws ConfigError;
  // +Inf, like anything above 1e9 s, is the same as 1e9 s).
  // `what` says what is being waited for ("reading the training data").
  StallWatch(double timeout, std::string what);
  // The same, without a copy of `what`, which must outlive the watch (for hot paths); a
  // timeout that is not positive and finite means off.
  struct Borrowed {};
  StallWatch(double timeout, const std::string& what, Borrowed) noexcept;
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

 private:
  void arm() noexcept;
  double timeout_;
  std::string owned_;
  const std::string* what_ = nullptr;
  long long deadline_ns_ = 0;        // steady clock; 0: not armed
  const StallWatch* outer_ = nullptr;  // the watch this one interrupts
};

}  // namespace asyncps
