// defines: DirLock
#include "checkpoint/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace asyncps::detail {

DirLock DirLock::acquire(const std::filesystem::path& dir, std::string& problem) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    problem = dir.string() + ": cannot create it: " + ec.message();
    return {};
  }
  const std::filesystem::path file = dir / "asyncps.lock";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    problem = file.string() + ": cannot open it: " + std::strerror(errno);
    return {};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // (a FIFO or device there: never used as the lock)
    ::close(fd);
    problem = file.string() + ": not a regular file; remove it";
    return {};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char who[512] = {};
    const ssize_t n = ::pread(fd, who, sizeof who - 1, 0);
    std::string holder = n > 0 ? std::string(who, static_cast<std::size_t>(n)) : std::string("unknown");
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    ::close(fd);
    problem = e == EWOULDBLOCK ? dir.string() + " is in use by another job (" + holder +
                                     "): two jobs must not share a checkpoint directory"
                               : file.string() + ": cannot lock it: " + std::strerror(e);
    return {};
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  char when[64] = {};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + " since " + when + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  DirLock lock;
  lock.fd_ = fd;
  return lock;
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

DirLock::DirLock(DirLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

DirLock& DirLock::operator=(DirLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

}  // namespace asyncps::detail
