// libFuzzer target: mnist_async's option parser reading a config file
// (apps/mnist_async/options.cpp: parse_config with `--config FILE`; the bytes are written to a
// file in /dev/shm first). Contract (options.h): returns a Config or throws asyncps::ConfigError
// naming the bad flag; anything else escaping, or a crash, is a finding.
// Its dictionary is fuzz/dict/config.dict (values and tokens) plus every flag of the parser and
// every name of the library's choice options, which this binary prints and exits when
// ASYNCPS_FUZZ_PRINT_DICT is set (scripts/run-fuzzers.sh): the flags come from the parser, the
// library's from its options' table, so a new option is in the dictionary without an edit.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <algorithm>

#include "asyncps/error.h"
#include "asyncps/option_table.h"
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

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!std::getenv("ASYNCPS_FUZZ_PRINT_DICT")) return 0;
  for (const std::string& name : mnist_async::flag_names()) std::printf("\"%s\"\n", name.c_str());
  for (const asyncps::OptionInfo& o : asyncps::option_table()) {
    if (!o.choices) continue;
    const std::string names = o.choices();  // "async | sync | ssp"
    for (std::size_t at = 0; at <= names.size();) {
      const std::size_t bar = std::min(names.find(" | ", at), names.size());
      std::printf("\"%s\"\n", names.substr(at, bar - at).c_str());
      at = bar + 3;
    }
  }
  std::fflush(stdout);
  std::_Exit(0);
}

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
