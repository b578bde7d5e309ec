// defines: set_log_sink, log (the default sink: "asyncps: ..." lines on stdout/stderr)
#include "asyncps/log.h"

#include <cstdio>
#include <utility>

namespace asyncps {

namespace {
LogSink& sink() {
  static LogSink s;
  return s;
}
void default_sink(LogLevel level, std::string_view text) {
  std::FILE* out = level == LogLevel::Info ? stdout : stderr;
  std::fprintf(out, "asyncps: %s%.*s\n", level == LogLevel::Warning ? "warning: " : "", static_cast<int>(text.size()),
               text.data());
  std::fflush(out);
}
}  // namespace

void set_log_sink(LogSink s) { sink() = std::move(s); }

// A sink that throws must not take this rank out of the job between two collectives (rank 0
// logs during the restore): what it threw is dropped and the line goes to the default sink.
void log(LogLevel level, std::string_view text) {
  if (sink()) try {
      sink()(level, text);
      return;
    } catch (...) {
    }
  default_sink(level, text);
}

}  // namespace asyncps
