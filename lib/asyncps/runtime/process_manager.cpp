// defines: leave_process_manager
#include "runtime/process_manager.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

namespace asyncps::detail {

namespace {

// The launcher's socket from PMI_FD, or -1.
int pmi_socket() noexcept {
  const char* s = std::getenv("PMI_FD");
  if (!s || !*s) return -1;
  char* end = nullptr;
  errno = 0;
  const long fd = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || fd < 0 || fd > INT_MAX) return -1;
  struct stat st {};
  if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) return -1;
  return static_cast<int>(fd);
}

bool send_all(int fd, const char* data, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

bool leave_process_manager(std::chrono::milliseconds limit) noexcept {
  const int fd = pmi_socket();
  if (fd < 0) return false;
  static constexpr char kFinalize[] = "cmd=finalize\n";
  bool acked = false;
  if (send_all(fd, kFinalize, sizeof kFinalize - 1)) {
    // one reply line: "cmd=finalize_ack\n"
    std::string line;
    const auto until = std::chrono::steady_clock::now() + limit;
    while (line.find('\n') == std::string::npos && line.size() < 1024) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      char buf[256];
      const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      line.append(buf, static_cast<std::size_t>(got));
    }
    acked = line.rfind("cmd=finalize_ack", 0) == 0;
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  return acked;
}

}  // namespace asyncps::detail
