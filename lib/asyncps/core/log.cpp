// defines: set_log_sink, log, set_log_level, log_level, log_enabled, detail::log_level_from_environment,
//          detail::set_log_origin (the default sink: "asyncps: ... [rank R of N on HOST]" lines on stdout/stderr)
#include "asyncps/log.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include "asyncps/error.h"
#include "core/log_origin.h"

namespace asyncps {

namespace {
LogSink& sink() {
  static LogSink s;
  return s;
}

constexpr struct {
  const char* name;
  LogLevel level;
} kLevels[] = {{"error", LogLevel::Error}, {"warning", LogLevel::Warning}, {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};

// ASYNCPS_LOG_LEVEL's level; `ok` false for a value that is none (then Info)
LogLevel environment_level(bool& ok) {
  ok = true;
  const char* v = std::getenv("ASYNCPS_LOG_LEVEL");
  if (!v || !*v) return LogLevel::Info;
  for (const auto& l : kLevels)
    if (std::string_view(v) == l.name) return l.level;
  ok = false;
  return LogLevel::Info;
}

std::atomic<int>& level_now() {
  static std::atomic<int> level{[] {
    bool ok = true;
    return static_cast<int>(environment_level(ok));
  }()};
  return level;
}

// " [rank R of N on HOST]", set once a Session or MpiEnvironment knows it (read by any thread
// after: the pointer is published whole)
std::atomic<const std::string*>& origin() {
  static std::atomic<const std::string*> o{nullptr};
  return o;
}

void default_sink(LogLevel level, std::string_view text) {
  std::FILE* out = level == LogLevel::Info || level == LogLevel::Debug ? stdout : stderr;
  const std::string_view where = log_origin();
  std::fprintf(out, "asyncps: %s%.*s%.*s\n", level == LogLevel::Warning ? "warning: " : "", static_cast<int>(text.size()),
               text.data(), static_cast<int>(where.size()), where.data());
  std::fflush(out);
}
}  // namespace

void set_log_sink(LogSink s) { sink() = std::move(s); }

std::string_view log_origin() noexcept {
  const std::string* where = origin().load(std::memory_order_acquire);
  return where ? std::string_view(*where) : std::string_view();
}

void set_log_level(LogLevel level) noexcept { level_now().store(static_cast<int>(level)); }
LogLevel log_level() noexcept { return static_cast<LogLevel>(level_now().load()); }
bool log_enabled(LogLevel level) noexcept {
  return level == LogLevel::Error || static_cast<int>(level) <= level_now().load();
}

// A sink that throws must not take this rank out of the job between two collectives (rank 0
// logs during the restore): what it threw is dropped and the line goes to the default sink.
void log(LogLevel level, std::string_view text) {
  if (!log_enabled(level)) return;
  if (sink()) try {
      sink()(level, text);
      return;
    } catch (...) {
    }
  default_sink(level, text);
}

void check_log_level_environment() {
  bool ok = true;
  (void)environment_level(ok);
  if (!ok)
    throw ConfigError(std::string("ASYNCPS_LOG_LEVEL must be error, warning, info or debug, got '") +
                      std::getenv("ASYNCPS_LOG_LEVEL") + "'");
}

namespace detail {

void set_log_origin() noexcept {
  if (origin().load(std::memory_order_acquire)) return;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  try {
    static std::once_flag once;
    std::call_once(once, [] {
      int rank = 0, size = 0, len = 0;
      char host[MPI_MAX_PROCESSOR_NAME] = {};
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      MPI_Get_processor_name(host, &len);
      static const std::string where =
          " [rank " + std::to_string(rank) + " of " + std::to_string(size) + " on " + std::string(host, static_cast<std::size_t>(len)) + "]";
      origin().store(&where, std::memory_order_release);
    });
  } catch (...) {  // (no memory for the line: lines go without it)
  }
}

}  // namespace detail

}  // namespace asyncps
