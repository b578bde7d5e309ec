// defines: asyncps::detail::Window, WindowPart, check_host_memory
// RAII over one MPI window made with MPI_Win_allocate (windows from MPI_Win_create are 20-60x
// slower for accumulates in Open MPI and their fetch-and-op waits for the target to enter MPI).
// Move-only. MPI_ERRORS_RETURN is set on it, so every failing call becomes an MpiError.
// Creation and free() are collective over the communicator. The destructor never is: a window
// not freed by then is abandoned (left to MPI_Finalize or the job's abort), so that no object
// going out of scope at a moment of its own (an exception, a garbage collector) can block a rank
// in a collective the others never enter. See docs/ARCHITECTURE.md "Where collectives happen".
#pragma once
#include <mpi.h>

#include <cstddef>
#include <span>

namespace asyncps::detail {

// One window's part on this rank, as check_host_memory weighs it.
struct WindowPart {
  const char* what;  // "embedding table": its message names the largest
  std::size_t bytes;
};
// Collective over comm, before the windows are made: ConfigError on every rank where the parts
// one host's ranks would expose together take more than 90% of its available memory.
void check_host_memory(MPI_Comm comm, std::span<const WindowPart> parts);

class Window {
 public:
  Window() = default;
  // Collective: every rank of `comm` calls it; `bytes` may be 0 on ranks that expose nothing.
  // `sum_and_no_op_only`: every accumulate on it will be MPI_SUM or MPI_NO_OP (lets the
  // implementation use hardware atomics); false for windows written with MPI_REPLACE.
  Window(MPI_Comm comm, std::size_t bytes, int disp_unit, const char* what, bool sum_and_no_op_only = true);
  ~Window();  // abandons a window that was not freed: never collective
  // Collective over the communicator it was made on: every rank frees its windows in the same
  // order. Throws MpiError.
  void free();
  Window(Window&& other) noexcept;
  Window& operator=(Window&& other) noexcept;
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  MPI_Win get() const noexcept { return win_; }
  std::size_t bytes() const noexcept { return bytes_; }
  template <class T>
  T* data() const noexcept { return static_cast<T*>(base_); }

 private:
  void abandon() noexcept;
  MPI_Win win_ = MPI_WIN_NULL;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

// Holds MPI_Win_lock_all on a window until unlock() (a passive-target epoch with a shared lock
// on every rank). Never MPI_MODE_NOCHECK: pt2pt hangs if such an epoch is followed by an
// exclusive lock. The destructor abandons an epoch still open (MPI_Win_unlock_all waits for
// this rank's operations at every target, which a stopped target never completes).
class LockAll {
 public:
  LockAll() = default;
  explicit LockAll(MPI_Win win);
  ~LockAll();
  LockAll(LockAll&& o) noexcept : win_(o.win_) { o.win_ = MPI_WIN_NULL; }
  LockAll& operator=(LockAll&& o) noexcept;
  void unlock();  // early, throwing on error; the destructor then does nothing

 private:
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace asyncps::detail
