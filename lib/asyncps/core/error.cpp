// defines: MpiError's constructor, detail::throw_mpi_error
#include <mpi.h>

#include <string>

#include "asyncps/error.h"
#include "core/check.h"

namespace asyncps {

namespace {
std::string describe(const std::string& call, int code, const std::string& where) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  // Keep only the function name of the call expression: "MPI_Win_allocate(...)" -> "MPI_Win_allocate".
  const std::string fn = call.substr(0, call.find('('));
  return fn + " failed: " + std::string(text, static_cast<std::size_t>(len)) + " (at " + where + ")";
}
}  // namespace

MpiError::MpiError(const std::string& call, int code, const std::string& where)
    : Error(describe(call, code, where)), code_(code) {}

namespace detail {
void throw_mpi_error(const char* call, int code, const char* file, int line) {
  std::string f = file;
  if (auto slash = f.rfind('/'); slash != std::string::npos) f = f.substr(slash + 1);
  throw MpiError(call, code, f + ":" + std::to_string(line));
}
}  // namespace detail

}  // namespace asyncps
