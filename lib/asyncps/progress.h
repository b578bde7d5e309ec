// defines: asyncps::detail::ProgressEngine, ProgressStats
// How a server lets the workers' one-sided operations complete while it has nothing else to do.
//
// Under Open MPI's osc rdma on one node (shared memory) nothing needs the target: the engine
// only notices shutdown and checkpoint requests, every `poll_us` (10 ms by default).
// Under osc pt2pt (between hosts, over TCP) an operation completes only when the target enters
// MPI. The engine enters MPI with MPI_Test on the shutdown barrier's request — progress without
// a round trip to any rank — and between entries sleeps in poll(2)
// on the process's sockets (SocketWaiter): it wakes when bytes arrive, enters MPI `burst` times
// (Open MPI completes what arrived over several entries), keeps entering MPI for `spin_us` after
// the last arrival (0 by default: measured no better on 1-2 workers), then sleeps again, at
// most `poll_us` (a bound for work MPI queued internally and for ranks on the same node, whose
// shared-memory messages wake no socket). docs/DECISIONS.md has the designs measured against
// it (timed polling, spinning, a progress thread, Casper's ghosts, a flush_all pump).
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "socket_waiter.h"

namespace asyncps::detail {

class Timeline;
class Liveness;

// Entries into MPI right after a wake-up: Open MPI completes what arrived (and sends the
// replies) over several entries, and no socket wakes anyone for that (1 entry: most steps waited
// for the next timeout; 16: none did). Used by the server and by waiting workers alike.
inline constexpr int kBurstAfterWake = 16;

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
  std::size_t sockets() const noexcept { return waiter_.sockets(); }

 private:
  ProgressConfig config_;
  Timeline* timeline_;
  SocketWaiter waiter_;
  ProgressStats stats_;
};

// Completes every request in `reqs` (and clears it). With a waiter (transports that need the
// target: the reply comes over a socket), it spins `spin_us`, then sleeps in poll(2) until bytes
// arrive (at most 1 ms at a time) and enters MPI a burst of times after each wake-up: a waiting
// worker then leaves its core to the ranks that share it (the server it waits for, among them).
// Without one it spins inside MPI_Waitall (shared memory: the answer is microseconds away).
class RequestWaiter {
 public:
  RequestWaiter() = default;
  // `max_sleep_us`: the longest single sleep (short when replies may come over shared memory,
  // which wakes no socket).
  RequestWaiter(bool sleep_on_sockets, int spin_us, int max_sleep_us = 1000)
      : sleep_(sleep_on_sockets), spin_us_(spin_us), max_sleep_us_(max_sleep_us) {}
  void wait_all(std::vector<MPI_Request>& reqs) {
    wait_all(reqs.data(), static_cast<int>(reqs.size()));
    reqs.clear();
  }
  void wait(MPI_Request& req) { wait_all(&req, 1); }
  void wait_all(MPI_Request* reqs, int n);  // completes them all (each becomes MPI_REQUEST_NULL)
  // With a liveness watch, a waiting worker keeps beating (it is alive: the silent one is whom
  // it waits for), and a wait that outlasts its stall timeout throws StallError naming `whom`
  // (the ranks the requests wait for) instead of waiting forever.
  void watch(Liveness* liveness, std::string whom) {
    liveness_ = liveness;
    whom_ = std::move(whom);
  }

 private:
  void check_stall(std::chrono::steady_clock::time_point since) const;
  Liveness* liveness_ = nullptr;
  std::string whom_;
  bool sleep_ = false;
  int spin_us_ = 50;
  int max_sleep_us_ = 1000;
  SocketWaiter sockets_;
  std::chrono::steady_clock::time_point last_scan_{};
};

}  // namespace asyncps::detail
