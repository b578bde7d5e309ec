// defines: asyncps::detail::ProgressEngine, ProgressStats, ProgressConfig
// How a server lets the workers' one-sided operations complete while it has nothing else to do.
//
// Under Open MPI's osc rdma on one node (shared memory) nothing needs the target: the engine
// only notices shutdown and checkpoint requests, every `poll_us` (10 ms by default).
// Under osc pt2pt (between hosts, over TCP) an operation completes only when the target enters
// MPI. The engine enters MPI with MPI_Test on the shutdown barrier's request — progress without
// a round trip to any rank — at the Wake pace of the one wait loop (transport/wait_loop.h):
// between entries it sleeps in poll(2) on the process's sockets, wakes when bytes arrive, enters
// MPI `burst` times (Open MPI completes what arrived over several entries), keeps entering MPI
// for `spin_us` after the last arrival (0 by default: measured no better on 1-2 workers), then
// sleeps again, at most `poll_us` (a bound for work MPI queued internally and for ranks on the
// same node, whose shared-memory messages wake no socket). Polling, it is the loop's Poll pace. docs/DECISIONS.md has the designs measured against
// it (timed polling, spinning, a progress thread, Casper's ghosts, a flush_all pump).
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "transport/wait_loop.h"

namespace asyncps::detail {

class Timeline;

struct ProgressStats {
  std::uint64_t rounds = 0;   // MPI entries
  std::uint64_t wakeups = 0;  // sleeps ended by a readable socket
};

struct ProgressConfig {
  bool wake_on_sockets = false;  // pt2pt: sleep in poll(2) on the sockets (else: timed sleeps)
  int poll_us = 10000;           // longest sleep between MPI entries
  int spin_us = 0;               // wake mode: keep entering MPI this long after the last arrival
  int burst = kBurstAfterWake;   // wake mode: entries into MPI right after each wake-up
  int tick_us = 10000;           // `each_tick` runs at least this often (and at most once a round)
};

class ProgressEngine {
 public:
  explicit ProgressEngine(ProgressConfig config, Timeline* timeline = nullptr);
  // Drives progress until `request` completes. `each_tick` (checkpoint requests) runs about
  // every `tick_us`; it must not call collective MPI operations.
  void run_until(MPI_Request& request, const std::function<void()>& each_tick = {});
  const ProgressStats& stats() const noexcept { return stats_; }
  const ProgressConfig& config() const noexcept { return config_; }
  std::size_t sockets() const noexcept { return loop_.sockets(); }

 private:
  ProgressConfig config_;
  Timeline* timeline_;
  WaitLoop loop_;
  ProgressStats stats_;
};

}  // namespace asyncps::detail
