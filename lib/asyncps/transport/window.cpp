// defines: Window, LockAll, check_host_memory
#include "transport/window.h"

#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "core/check.h"
#include "transport/mpi_implementation.h"

namespace asyncps::detail {

namespace {
constexpr std::size_t kLineBytes = 64;

std::string gigabytes(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GB", bytes / 1e9);
  return b;
}

// Bytes this host could still give (MemAvailable), or its physical memory where that is unknown;
// 0 when neither can be read.
double host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (in >> key >> kb) {
    if (key == "MemAvailable:") return kb * 1024.0;
    in.ignore(256, '\n');
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}
}  // namespace

void check_host_memory(MPI_Comm comm, std::span<const WindowPart> parts) {
  // Parts larger than their host can give fail on every rank (or are killed by the OOM killer once
  // touched): each rank sums what its host's ranks would expose, window by window, and if one
  // host's parts take more than 90% of its memory, every rank refuses them before any window is
  // allocated (a window allocated before the refusal is abandoned, which MPICH's UCX refuses at
  // MPI_Finalize), naming that host's first rank, the largest window, the size and the limit.
  const std::size_t n = parts.size();
  std::vector<double> on_host(2 * n + 1, 0.0);  // [bytes per window | ranks with a part | all bytes]
  for (std::size_t k = 0; k < n; ++k) {
    const double padded = static_cast<double>((parts[k].bytes + kLineBytes - 1) / kLineBytes * kLineBytes);
    on_host[k] = padded;
    on_host[n + k] = parts[k].bytes > 0 ? 1.0 : 0.0;
    on_host[2 * n] += padded;
  }
  MPI_Comm node = MPI_COMM_NULL;
  ASYNCPS_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int summed = MPI_Allreduce(MPI_IN_PLACE, on_host.data(), static_cast<int>(on_host.size()), MPI_DOUBLE, MPI_SUM, node);
  // one reading of the host's memory for all its ranks: their shares are then equal, and the
  // host is named by its first rank
  double available = 0;
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  if (node_rank == 0) available = host_memory_available();
  if (summed == MPI_SUCCESS) summed = MPI_Bcast(&available, 1, MPI_DOUBLE, 0, node);
  MPI_Comm_free(&node);
  ASYNCPS_MPI_CHECK(summed);
  struct {
    double share;
    int rank;
  } mine{available > 0 ? on_host[2 * n] / available : 0.0, 0}, worst{};
  MPI_Comm_rank(comm, &mine.rank);
  ASYNCPS_MPI_CHECK(MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm));
  if (worst.share <= 0.9) return;
  on_host.push_back(available);
  ASYNCPS_MPI_CHECK(MPI_Bcast(on_host.data(), static_cast<int>(on_host.size()), MPI_DOUBLE, worst.rank, comm));
  std::size_t big = 0;
  for (std::size_t k = 1; k < n; ++k)
    if (on_host[k] > on_host[big]) big = k;
  const long ranks = std::lround(on_host[n + big]);
  const double others = on_host[2 * n] - on_host[big];
  throw ConfigError("the " + std::string(parts[big].what) + " window needs " + gigabytes(on_host[big]) +
                    " on the host of rank " + std::to_string(worst.rank) +
                    (ranks > 1 ? " (" + std::to_string(ranks) + " ranks' parts)" : "") + ", which has " +
                    gigabytes(on_host.back()) + " of memory available" +
                    (others >= 5e7 ? " beside the other windows' " + gigabytes(others) : "") +
                    ": fewer or narrower rows, more servers (Options::num_servers) or hosts with more memory");
}

Window::Window(MPI_Comm comm, std::size_t bytes, int disp_unit, const char* what, bool sum_and_no_op_only) {
  MPI_Info info;
  ASYNCPS_MPI_CHECK(MPI_Info_create(&info));
  // Pushes are accumulates of MPI_FLOAT with MPI_SUM (and MPI_NO_OP reads): say so, so the
  // implementation may use hardware atomics for them.
  if (sum_and_no_op_only) MPI_Info_set(info, "accumulate_ops", "same_op_no_op");
  MPI_Info_set(info, "same_disp_unit", "true");
  // Each rank's part is a whole number of cache lines. MPICH 4.0.2 (ch4, one node, where the window
  // is one shared segment) misplaces the next rank's part when a rank's size is not a multiple of
  // 16 bytes: with 578 floats on server 0, a get of server 1's first float returned server 0's
  // float 576 (tests/core/test_sharding_np4.cpp); with 580 or 584 it is right.
  const std::size_t padded = (bytes + kLineBytes - 1) / kLineBytes * kLineBytes;
  const int rc = MPI_Win_allocate(static_cast<MPI_Aint>(padded), disp_unit, info, comm, &base_, &win_);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    throw MpiError("MPI_Win_allocate", rc,
                   "the " + std::string(what) + " window of " + gigabytes(static_cast<double>(padded)) +
                       " on this rank; " + mpi_implementation().window_failure_hint());
  }
  bytes_ = bytes;
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
}

Window::~Window() { abandon(); }

Window::Window(Window&& other) noexcept
    : win_(std::exchange(other.win_, MPI_WIN_NULL)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Window& Window::operator=(Window&& other) noexcept {
  if (this != &other) {
    abandon();
    win_ = std::exchange(other.win_, MPI_WIN_NULL);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Window::free() {
  if (win_ == MPI_WIN_NULL) return;
  MPI_Win w = std::exchange(win_, MPI_WIN_NULL);
  base_ = nullptr;
  bytes_ = 0;
  ASYNCPS_MPI_CHECK(MPI_Win_free(&w));
}

void Window::abandon() noexcept {
  win_ = MPI_WIN_NULL;  // (leaked: freeing is collective, see the header)
  base_ = nullptr;
  bytes_ = 0;
}

LockAll::LockAll(MPI_Win win) {
  ASYNCPS_MPI_CHECK(MPI_Win_lock_all(0, win));
  win_ = win;
}

LockAll::~LockAll() = default;  // an epoch still open is abandoned (see the header)

LockAll& LockAll::operator=(LockAll&& o) noexcept {
  if (this != &o) win_ = std::exchange(o.win_, MPI_WIN_NULL);  // (an open epoch here: abandoned)
  return *this;
}

void LockAll::unlock() {
  if (win_ == MPI_WIN_NULL) return;
  const MPI_Win w = std::exchange(win_, MPI_WIN_NULL);
  ASYNCPS_MPI_CHECK(MPI_Win_unlock_all(w));
}

}  // namespace asyncps::detail
