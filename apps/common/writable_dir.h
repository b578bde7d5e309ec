// defines: app_cli::check_writable_dir, app_cli::refuse_timeline_over_logs
// The example apps' check of a directory flag (--logdir, --export_dir) before training, not after,
// and of a --timeline path that would replace the chief's logs there.
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "asyncps/error.h"

namespace app_cli {

// Creates `dir` if needed and checks a file can be written in it; ConfigError naming `flag`
// otherwise.
inline void check_writable_dir(const std::string& dir, const char* flag) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw asyncps::ConfigError(std::string(flag) + " " + dir + ": cannot create it: " + ec.message());
  const auto probe = std::filesystem::path(dir) / (".write-test-" + std::to_string(::getpid()));
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw asyncps::ConfigError(std::string(flag) + " " + dir + ": cannot write in it: " + std::strerror(errno));
  std::fclose(f);
  std::filesystem::remove(probe, ec);
}

// ConfigError where the trace file `timeline` (--timeline) is one of the chief's logs in `logdir`:
// a file named in `logs` or one starting with "events.out.tfevents" (its TensorBoard event files,
// this run's or an earlier one's). (The library refuses a checkpoint's files itself.)
inline void refuse_timeline_over_logs(const std::string& timeline, const std::string& logdir,
                                      std::initializer_list<std::string_view> logs) {
  namespace fs = std::filesystem;
  if (timeline.empty() || logdir.empty()) return;
  std::error_code ec;
  const fs::path trace = fs::weakly_canonical(fs::absolute(timeline, ec), ec);
  const fs::path dir = fs::weakly_canonical(fs::absolute(logdir, ec), ec);
  if (ec || trace.parent_path() != dir) return;
  const std::string name = trace.filename().string();
  bool theirs = name.starts_with("events.out.tfevents");
  for (std::string_view log : logs) theirs = theirs || name == log;
  if (theirs)
    throw asyncps::ConfigError("--timeline " + timeline + " would replace the chief's " + name +
                               " in --logdir: name another file");
}

}  // namespace app_cli
