// defines: mnist_async::Clock, since, cpu_seconds, peak_rss_mb — what a rank reports of its own time and memory
#pragma once
#include <sys/resource.h>

#include <chrono>

namespace mnist_async {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline double cpu_seconds() {  // user + system CPU time of this process
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports kilobytes
}

}  // namespace mnist_async
