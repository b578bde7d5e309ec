// defines: ASYNCPS_MPI_CHECK, asyncps::detail::throw_mpi_error
// Every MPI call in the library goes through ASYNCPS_MPI_CHECK; a failure becomes an MpiError
// whose message names the call and where it was made. (Windows and the library's communicator
// have MPI_ERRORS_RETURN set, so errors come back instead of aborting inside MPI.)
#pragma once
#include <mpi.h>

namespace asyncps::detail {
[[noreturn]] void throw_mpi_error(const char* call, int code, const char* file, int line);
}  // namespace asyncps::detail

#define ASYNCPS_MPI_CHECK(call)                                                    \
  do {                                                                             \
    const int asyncps_rc_ = (call);                                                \
    if (asyncps_rc_ != MPI_SUCCESS)                                                \
      ::asyncps::detail::throw_mpi_error(#call, asyncps_rc_, __FILE__, __LINE__);  \
  } while (0)
