// defines: app_cli::check_writable_dir
// The example apps' check of a directory flag (--logdir, --export_dir) before training, not after.
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

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

}  // namespace app_cli
