// libFuzzer target: mnist_async's option parser reading a config file
// (apps/mnist_async/options.cpp: parse_config with `--config FILE`; the bytes are written to a
// file in /dev/shm first). Contract (options.h): returns a Config or throws asyncps::ConfigError
// naming the bad flag; anything else escaping, or a crash, is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "asyncps/error.h"
#include "options.h"

namespace {

namespace fs = std::filesystem;

const std::string& config_path() {
  static const std::string path = [] {
    const fs::path dir = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string p = (dir / ("asyncps-fuzz-config." + std::to_string(::getpid()))).string();
    std::atexit([] { std::remove(config_path().c_str()); });
    return p;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(config_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) {
      std::perror(config_path().c_str());
      std::abort();
    }
  }
  std::string prog = "mnist_async", flag = "--config", file = config_path();
  char* argv[] = {prog.data(), flag.data(), file.data(), nullptr};
  try {
    (void)mnist_async::parse_config(3, argv, /*print_help=*/false);
  } catch (const asyncps::ConfigError&) {
  }
  return 0;
}
