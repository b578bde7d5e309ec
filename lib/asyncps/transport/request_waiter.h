// defines: asyncps::detail::RequestWaiter, WaitWatch, wait_sleeping
// How a rank waits for its own one-sided requests and for a non-blocking collective without
// busy-spinning a core it may share with the rank it waits for (the loop: transport/wait_loop.h).
#pragma once
#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "transport/wait_loop.h"

namespace asyncps::detail {

// Whoever watches this rank's liveness while it waits (diagnostics' Liveness implements it):
// the transport tells it that the rank is alive and how long a wait has lasted.
class WaitWatch {
 public:
  virtual ~WaitWatch() = default;
  virtual bool watching() const noexcept = 0;
  // Every operation that enters MPI: a heartbeat, if one is due (cheap: a clock comparison).
  virtual void beat() = 0;
  // A wait for `whom` that has lasted `waited` seconds: throws StallError once it is too long.
  virtual void check_wait(double waited, const std::string& whom) const = 0;
};

// Completes requests. Sleeping on sockets (transports that need the target: the reply comes over
// a socket), it waits at the WaitLoop's Wake pace: spins `spin_us`, then sleeps in poll(2) until
// bytes arrive (at most `max_sleep_us` at a time) and enters MPI a burst of times after each
// wake-up: a waiting worker then leaves its core to the ranks that share it (the server it waits
// for, among them). Without sockets it spins inside MPI (shared memory: the answer is
// microseconds away).
class RequestWaiter {
 public:
  RequestWaiter() = default;
  // `max_sleep_us`: the longest single sleep (short when replies may come over shared memory,
  // which wakes no socket).
  RequestWaiter(bool sleep_on_sockets, int spin_us, int max_sleep_us = 1000);
  void wait_all(std::vector<MPI_Request>& reqs) {
    wait_all(reqs.data(), static_cast<int>(reqs.size()));
    reqs.clear();
  }
  void wait(MPI_Request& req) { wait_all(&req, 1); }
  void wait_all(MPI_Request* reqs, int n);  // completes them all (each becomes MPI_REQUEST_NULL)
  // With a watch, a waiting rank keeps beating (it is alive: the silent one is whom it waits
  // for), and a wait that outlasts the stall timeout throws StallError naming `whom` (the ranks
  // the requests wait for) instead of waiting forever.
  void watch(WaitWatch* watch, std::string whom) {
    watch_ = watch;
    whom_ = std::move(whom);
  }

 private:
  void check_stall(std::chrono::steady_clock::time_point since) const;
  WaitWatch* watch_ = nullptr;
  std::string whom_;
  WaitLoop loop_{WaitPace{WaitMode::Spin}};
};

// Completes `request`, entering MPI every `poll_us` and sleeping in between (never spinning: the
// WaitLoop's Poll pace).
// `each_round`, if given, runs after every unsuccessful test.
void wait_sleeping(MPI_Request& request, int poll_us, const std::function<void()>& each_round = {});

}  // namespace asyncps::detail
