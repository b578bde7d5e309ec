// defines: ASYNCPS_MPI_CHECK, asyncps::detail::throw_mpi_error
// MPI calls whose failure matters go through ASYNCPS_MPI_CHECK (queries such as MPI_Comm_rank and
// best-effort calls in destructors do not); a failure becomes an MpiError
// whose message names the call and where it was made. (Windows and the library's communicator
// have MPI_ERRORS_RETURN set, so errors come back instead of aborting inside MPI.)
#pragma once
#include <mpi.h>

#include <exception>

namespace asyncps::detail {
[[noreturn]] void throw_mpi_error(const char* call, int code, const char* file, int line);

// True while an exception is propagating. Every RAII holder of an MPI resource whose release
// is collective or waits for other ranks (MPI_Win_free, MPI_Win_unlock_all, MPI_Comm_free)
// abandons it instead: the ranks that did not fail are elsewhere (in a broadcast, a barrier,
// a wait), so entering the collective would wait forever and the error would never reach the
// code that ends the job (abort_job). This is the library's one rule against hangs on failure:
// a failing rank never waits for the others; it leaks and reports (see ARCHITECTURE.md
// "Failure").
inline bool unwinding() noexcept { return std::uncaught_exceptions() > 0; }
}  // namespace asyncps::detail

#define ASYNCPS_MPI_CHECK(call)                                                    \
  do {                                                                             \
    const int asyncps_rc_ = (call);                                                \
    if (asyncps_rc_ != MPI_SUCCESS)                                                \
      ::asyncps::detail::throw_mpi_error(#call, asyncps_rc_, __FILE__, __LINE__);  \
  } while (0)
