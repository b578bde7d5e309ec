// defines: asyncps::detail::set_log_origin
// What the default log sink appends to every line (see asyncps/log.h). Defined in log.cpp.
#pragma once

namespace asyncps::detail {

// From now on the default sink ends every line with " [rank R of N on HOST]" (MPI_COMM_WORLD).
// Call on the thread that made MPI's first call; does nothing before MPI_Init or after
// MPI_Finalize, or once it was set.
void set_log_origin() noexcept;

}  // namespace asyncps::detail
