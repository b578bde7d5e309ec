// defines: asyncps::detail::WindowCreationLock
// Open MPI 4's osc rdma backs a window's ranks on one node by a shared-memory file named by the
// node, the job and the window's communicator id, and two communicators of one job made by one
// MPI_Comm_split can have the same id (open-mpi/ompi#9492, fixed in Open MPI 5.0). Two Sessions on
// them that create windows on one node at the same time map one file: each other's parameters,
// silently. The file exists only while MPI_Win_allocate runs, so on one node the job's Sessions
// create their windows one at a time: the first rank of this communicator on each node holds a
// lock file (flock, in /dev/shm or /tmp, named by the node) while its Session creates them. Every rank first agrees
// that each node's lock is held, else each lets go and tries again after a short random pause (no
// rank waits for a lock while holding another: no deadlock between Sessions across nodes).
#pragma once
#include <mpi.h>

namespace asyncps::detail {

class WindowCreationLock {
 public:
  // Collective over comm; does nothing where the MPI names its files uniquely (not Open MPI 4).
  explicit WindowCreationLock(MPI_Comm comm);
  ~WindowCreationLock();  // lets go (never collective)
  WindowCreationLock(const WindowCreationLock&) = delete;
  WindowCreationLock& operator=(const WindowCreationLock&) = delete;

 private:
  int fd_ = -1;  // the held lock file (this node's first rank only)
};

}  // namespace asyncps::detail
