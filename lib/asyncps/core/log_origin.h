// defines: asyncps::detail::set_log_origin, check_log_level_environment
// What the default log sink appends to every line, and the check of ASYNCPS_LOG_LEVEL (see
// asyncps/log.h). Defined in log.cpp.
#pragma once

namespace asyncps::detail {

// From now on the default sink ends every line with " [rank R of N on HOST]" (MPI_COMM_WORLD).
// Call on the thread that made MPI's first call; does nothing before MPI_Init or after
// MPI_Finalize, or once it was set.
void set_log_origin() noexcept;
// ConfigError "ASYNCPS_LOG_LEVEL must be error, warning, info or debug, got '...'" for any other
// value (the log then uses Info).
void check_log_level_environment();


}  // namespace asyncps::detail
