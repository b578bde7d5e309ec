// defines: asyncps::detail::DirLock
// An exclusive advisory lock (flock) on <dir>/asyncps.lock, held by server 0 for the life of a
// job that keeps checkpoints there: a second job on the same directory is refused at start
// with a message naming the holder (pid, host, start time, written into the file). The kernel
// drops the lock when the holder exits, however it exits, so a crashed job never blocks the
// next one. (Between hosts it protects server 0's host: flock on a network file system is only
// as good as that file system's locking.)
#pragma once
#include <filesystem>
#include <string>

namespace asyncps::detail {

class DirLock {
 public:
  DirLock() = default;
  // Takes the lock or returns an empty DirLock and sets `holder` to a description of who has it
  // (or why it could not be taken).
  static DirLock acquire(const std::filesystem::path& dir, std::string& problem);
  ~DirLock();
  DirLock(DirLock&& o) noexcept;
  DirLock& operator=(DirLock&& o) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  bool held() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace asyncps::detail
