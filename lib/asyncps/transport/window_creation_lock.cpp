// defines: WindowCreationLock
#include "transport/window_creation_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

// This node's name as MPI gives it (Open MPI names its files by it too), fit for a file name.
std::string node_name() {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  std::string node(host, static_cast<std::size_t>(std::max(length, 0)));
  for (char& ch : node)
    if (ch == '/') ch = '_';
  return node;
}

// This user's lock file for window creation on this node, named by the node (hosts that share a
// file system, or network namespaces on one machine, each lock their own). -1 where none can be
// opened: then no lock is taken.
int open_lock_file(const std::string& node) {
  const std::string name = "/asyncps-window-creation-" + std::to_string(::getuid()) + "-" + node + ".lock";
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
  // Two nodes of this communicator under one name would wait for each other's lock for good: then
  // none is taken (Open MPI names its files by the node name too: nothing a lock could keep apart).
  const std::string name = node_name();
  const std::uint64_t mine_named = node_rank == 0 ? std::hash<std::string>{}(name) | 1 : 0;
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<std::uint64_t> named(static_cast<std::size_t>(size));
  ASYNCPS_MPI_CHECK(MPI_Allgather(&mine_named, 1, MPI_UINT64_T, named.data(), 1, MPI_UINT64_T, comm));
  std::erase(named, 0);
  std::sort(named.begin(), named.end());
  if (std::adjacent_find(named.begin(), named.end()) != named.end()) return;
  const int file = node_rank == 0 ? open_lock_file(name) : -1;
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
