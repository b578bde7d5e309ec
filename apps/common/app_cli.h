// defines: app_cli::require, show, refuse_placeholders, with_names, install_log_sink
// What the example programs (mnist_async, ctr_async) share on their command line and in their
// log lines: one-line flag errors, Boost.Program_options' placeholder guard, and the library's
// API names rewritten as each program's flags. Header-only; the library never names a flag.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "asyncps/error.h"
#include "asyncps/log.h"

namespace app_cli {

// The example programs' exit codes beyond 0 and 1 (every rank alike): a worker halted the job on
// a non-finite gradient (--halt_on_nonfinite), or SIGTERM stopped it after its final checkpoint.
inline constexpr int kHaltedExit = 3;
inline constexpr int kTerminatedExit = 143;

// Server 0's one line when SIGTERM stopped the job (the others say nothing): the step and the
// checkpoint a restart resumes from.
inline void print_terminated(int rank, long long step, const std::string& saved_checkpoint) {
  if (rank != 0) return;
  const std::string saved = saved_checkpoint.empty() ? "no checkpoint saved (no --logdir)"
                                                     : "saved " + saved_checkpoint + ": a restart resumes from it";
  std::fprintf(stderr, "asyncps: stopped by SIGTERM at global step %lld (scancel, pre-emption, or a signal to mpirun); %s\n",
               step, saved.c_str());
}

// Throws the one-line ConfigError unless ok.
inline void require(bool ok, const std::string& message) {
  if (!ok) throw asyncps::ConfigError(message);
}

// A double as a user wrote it (1e+39, nan, 0.1, 1000001, 0.4999999): six digits where they read
// back as the same value, else the shortest text that does (a value just out of range is never
// shown as one in range).
inline std::string show(double v) {
  std::ostringstream s;
  s << v;
  if (std::isnan(v) || std::strtod(s.str().c_str(), nullptr) == v) return s.str();
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Boost.Program_options builds its error messages by replacing "%canonical_option%",
// "%value%", ... in a template with the option's name and value, over and over: a name or
// value that itself holds such a token never ends (a hang, found by fuzz/fuzz_config.cpp).
inline void refuse_placeholders(const std::string& text, const char* where) {
  static const std::regex token("%[A-Za-z_]+%");
  if (std::regex_search(text, token))
    throw asyncps::ConfigError(std::string(where) + " holds a '%name%' token (not allowed in a flag or its value)");
}

// The message with every API name of `names` ({api, flag} pairs, longest api first) replaced by
// its flag.
template <class Names>
std::string with_names(std::string_view library_message, const Names& names) {
  std::string m(library_message);
  for (const auto& [api_name, flag_name] : names) {
    const std::string_view api(api_name), flag(flag_name);
    for (std::size_t at = m.find(api); at != std::string::npos; at = m.find(api, at + flag.size()))
      m.replace(at, api.size(), flag);
  }
  return m;
}

// The library's lines as "asyncps: ..." (warnings marked) in this program's flag names, each
// ending with the rank that says it, as the default sink's do.
inline void install_log_sink(std::string (*rename)(std::string_view)) {
  asyncps::set_log_sink([rename](asyncps::LogLevel level, std::string_view text) {
    const std::string line = rename(text);
    const bool out_line = level == asyncps::LogLevel::Info || level == asyncps::LogLevel::Debug;
    std::FILE* out = out_line ? stdout : stderr;
    const std::string_view where = asyncps::log_origin();
    std::fprintf(out, "asyncps: %s%s%.*s\n", level == asyncps::LogLevel::Warning ? "warning: " : "", line.c_str(),
                 static_cast<int>(where.size()), where.data());
    std::fflush(out);
  });
}

}  // namespace app_cli
