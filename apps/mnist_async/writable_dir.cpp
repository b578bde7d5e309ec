// defines: check_writable_dir
#include "writable_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "asyncps/error.h"

namespace mnist_async {

void check_writable_dir(const std::string& dir, const char* flag) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw asyncps::ConfigError(std::string(flag) + " " + dir + ": cannot create it: " + ec.message());
  const auto probe = std::filesystem::path(dir) / (".write-test-" + std::to_string(::getpid()));
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw asyncps::ConfigError(std::string(flag) + " " + dir + ": cannot write in it: " + std::strerror(errno));
  std::fclose(f);
  std::filesystem::remove(probe, ec);
}

}  // namespace mnist_async
