// defines: SocketWaiter
#include "transport/socket_waiter.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace asyncps::detail {

void SocketWaiter::rescan() {
  fds_.clear();
  listening_.clear();
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;  // not Linux, or no /proc: the caller falls back to timed polling
  const int self = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    struct stat st{};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    fds_.push_back(pollfd{static_cast<int>(fd), POLLIN, 0});
    int accepting = 0;
    socklen_t len = sizeof accepting;
    listening_.push_back(::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 &&
                         accepting != 0);
  }
  ::closedir(dir);
}

bool SocketWaiter::wait(int timeout_us) {
  connection_pending_ = false;
  if (fds_.empty()) return false;

  const timespec ts{timeout_us / 1000000, static_cast<long>(timeout_us % 1000000) * 1000};
  const int n = ::ppoll(fds_.data(), fds_.size(), &ts, nullptr);
  if (n <= 0) return false;  // timeout, or EINTR: the caller polls MPI anyway
  bool readable = false, gone = false;
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    pollfd& p = fds_[i];
    if (p.revents & POLLIN) readable = true;
    if ((p.revents & POLLIN) && listening_[i]) connection_pending_ = true;
    // closed (NVAL) or hung up / failed (HUP, ERR: level-triggered, it would wake us forever):
    // stop watching it; MPI itself reports a peer that is gone
    if (p.revents & (POLLNVAL | POLLHUP | POLLERR)) { p.fd = -1; gone = true; }
  }
  if (gone) {  // (a rescan restores the pairing of fds_ and listening_)
    std::vector<pollfd> keep;
    std::vector<bool> keep_listening;
    for (std::size_t i = 0; i < fds_.size(); ++i)
      if (fds_[i].fd >= 0) keep.push_back(fds_[i]), keep_listening.push_back(listening_[i]);
    fds_.swap(keep);
    listening_.swap(keep_listening);
  }
  return readable || gone;
}

}  // namespace asyncps::detail
