// defines: asyncps::LogLevel, asyncps::LogSink, asyncps::set_log_sink, asyncps::log
// Everything libasyncps has to say that is not an exception — a checkpoint restored, a damaged
// one skipped, a save that failed on a full disk, an earlier run's files moved aside, the
// fatal line of abort_job — goes through one sink the program may replace. Messages name the
// library's own API (Options::checkpoint.restart_from, ...), never a program's flags.
//
//   asyncps::set_log_sink([](asyncps::LogLevel level, std::string_view text) { my_logger(level, text); });
//
// The default sink writes "asyncps: <text>" (Info) to stdout, "asyncps: warning: <text>"
// (Warning) and "asyncps: <text>" (Error) to stderr, one line each, flushed.
#pragma once
#include <functional>
#include <string_view>

namespace asyncps {

enum class LogLevel { Info, Warning, Error };
using LogSink = std::function<void(LogLevel, std::string_view)>;

// Replaces the sink (an empty one restores the default). Not thread-safe against log(). A
// sink that throws loses nothing: that line goes to the default sink instead.
void set_log_sink(LogSink sink);
// Sends one message to the sink (no trailing newline).
void log(LogLevel level, std::string_view text);

}  // namespace asyncps
