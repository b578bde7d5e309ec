// defines: asyncps::detail::SocketWaiter
// Sleeps until bytes arrive on any of this process's sockets (Linux: /proc/self/fd). Under
// Open MPI's TCP transport the library's one-sided traffic arrives on sockets that only the
// main thread reads (inside MPI calls), so "a socket is readable" means "something is waiting
// for this rank to enter MPI": the server can sleep in poll(2) instead of on a timer and still
// answer within a wake-up latency. Sockets that other threads serve (Open MPI's run-time
// connection to its daemon) can wake it spuriously; that costs one MPI_Test.
#pragma once
#include <poll.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace asyncps::detail {

// The pace of both waits that sleep on sockets (the server's ProgressEngine, a worker's
// RequestWaiter): new connections are found at least this often, and the first sleep after
// activity is this short (then doubling: MPI may complete work on later entries without new
// bytes to wake anyone).
inline constexpr auto kSocketRescanEvery = std::chrono::milliseconds(100);
inline constexpr int kFirstBackoffUs = 100;

class SocketWaiter {
 public:
  // Re-reads the set of sockets (new connections are made lazily, on first use).
  void rescan();
  // True when the last rescan found at least one socket to watch.
  bool usable() const noexcept { return !fds_.empty(); }
  std::size_t sockets() const noexcept { return fds_.size(); }
  // Sleeps until a watched socket is readable or `timeout_us` passes (0: just checks).
  // Returns true when a socket is readable.
  bool wait(int timeout_us);
  // Whether the last wait() saw a listening socket ready (a new connection: rescan after MPI
  // has accepted it).
  bool connection_pending() const noexcept { return connection_pending_; }

 private:
  std::vector<pollfd> fds_;
  std::vector<bool> listening_;
  bool connection_pending_ = false;
};

}  // namespace asyncps::detail
