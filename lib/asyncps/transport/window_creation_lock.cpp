// defines: WindowCreationLock
#include "transport/window_creation_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "asyncps/error.h"
#include "core/check.h"
#include "transport/mpi_implementation.h"

namespace asyncps::detail {

namespace {
constexpr int kMaxTries = 6000;  // about 60 s of pauses of 1 to 20 ms: another Session's creation is far shorter

bool needs_lock() {
  const MpiImplementation& m = mpi_implementation();
  return m.family == MpiFamily::OpenMpi && m.major < 5;
}

// This user's lock file for window creation on this node (-1 where none can be opened: then no
// lock is taken, as before).
int open_lock_file() {
  const std::string name = "/asyncps-window-creation-" + std::to_string(::getuid()) + ".lock";
  for (const char* dir : {"/dev/shm", "/tmp"}) {
    const int fd = ::open((dir + name).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
  }
  return -1;
}
}  // namespace

WindowCreationLock::WindowCreationLock(MPI_Comm comm) {
  if (!needs_lock()) return;
  MPI_Comm node = MPI_COMM_NULL;
  ASYNCPS_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  const int file = node_rank == 0 ? open_lock_file() : -1;
  std::minstd_rand pause(static_cast<unsigned>(::getpid()));
  for (int attempt = 0;; ++attempt) {
    const int mine = file < 0 || ::flock(file, LOCK_EX | LOCK_NB) == 0 ? 1 : 0;
    int all = 0;
    ASYNCPS_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
    if (all == 1) break;
    if (file >= 0 && mine == 1) ::flock(file, LOCK_UN);
    if (attempt == kMaxTries) {
      if (file >= 0) ::close(file);
      throw ConfigError("another Session of this job has been creating its windows on one of this Session's nodes "
                        "for about a minute; this one cannot create its own meanwhile (Open MPI 4 would give both "
                        "one shared-memory file: open-mpi/ompi#9492)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(1000 + pause() % 19000));
  }
  fd_ = file;
}

WindowCreationLock::~WindowCreationLock() {
  if (fd_ < 0) return;
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace asyncps::detail
