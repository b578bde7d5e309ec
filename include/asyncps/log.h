// defines: asyncps::LogLevel, asyncps::LogSink, asyncps::set_log_sink, asyncps::log,
//          asyncps::set_log_level, asyncps::log_level, asyncps::log_enabled,
//          asyncps::check_log_level_environment
// Everything libasyncps has to say that is not an exception — a checkpoint restored, a damaged
// one skipped, a save that failed on a full disk, an earlier run's files moved aside, the
// fatal line of abort_job — goes through one sink the program may replace. Messages name the
// library's own API (Options::checkpoint.restart_from, ...), never a program's flags.
//
//   asyncps::set_log_sink([](asyncps::LogLevel level, std::string_view text) { my_logger(level, text); });
//
// Levels, most severe first: Error, Warning, Info, Debug. Lines of a level more detailed than
// log_level() are dropped before any sink sees them. The level starts as the environment's
// ASYNCPS_LOG_LEVEL (error, warning, info or debug; default info); a Session refuses any other
// value on every rank (ConfigError naming it). Error lines are never dropped.
//
// The default sink writes one flushed line per message: "asyncps: <text> [rank R of N on HOST]"
// (Info and Debug on stdout; Warning as "asyncps: warning: <text> ..." and Error on stderr). The
// "[rank ...]" part (MPI_COMM_WORLD's rank and size, MPI_Get_processor_name: log_origin()) is
// there once a Session or MpiEnvironment has been made in the process, or abort_job called. A
// sink the program sets gets the bare text; it appends log_origin() to say the same.
#pragma once
#include <functional>
#include <string_view>

namespace asyncps {

enum class LogLevel { Error, Warning, Info, Debug };
using LogSink = std::function<void(LogLevel, std::string_view)>;

// Replaces the sink (an empty one restores the default). Not thread-safe against log(). A
// sink that throws loses nothing: that line goes to the default sink instead.
void set_log_sink(LogSink sink);
// Sends one message to the sink (no trailing newline), unless its level is dropped.
void log(LogLevel level, std::string_view text);

// The most detailed level sent to the sink (Error at least: errors are never dropped).
void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;
// Whether a line of `level` would be sent: build a costly Debug line only where it is.
bool log_enabled(LogLevel level) noexcept;
// ConfigError "ASYNCPS_LOG_LEVEL must be error, warning, info or debug, got '...'" where the
// environment sets any other value (the log then uses Info): what a Session refuses on every
// rank, for a program that runs without one.
void check_log_level_environment();
// " [rank R of N on HOST]" (with its leading space) once known, else "".
std::string_view log_origin() noexcept;

}  // namespace asyncps
