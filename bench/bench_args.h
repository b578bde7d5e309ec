// defines: bench::Args — the benchmarks' command lines, parsed strictly (the library's messages in their flags: flag_names.h)
// Every benchmark takes --flag value pairs; a value is a whole number or a finite number within
// the flag's range, a flag the benchmark does not know, a missing value or a bad one throws
// std::invalid_argument naming the program, the flag and the range (the caller prints it as one
// "asyncps:" line and exits non-zero). Nothing is cast or wrapped: --bytes 1e20 and --seconds nan
// are refused, not run as something else.
//
//   bench::Args args("bench_scaling", argc, argv, {"--bytes", "--seconds", "--json"});
//   const auto bytes = args.integer("--bytes", 36392, 4, std::int64_t{1} << 40);
//   const double seconds = args.real("--seconds", 3, 0.001, 86400);
//   const std::string json = args.text("--json", "");
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace bench {

class Args {
 public:
  Args(std::string program, int argc, char** argv, std::initializer_list<const char*> known) : program_(std::move(program)) {
    for (int i = 1; i < argc; i += 2) {
      const std::string flag = argv[i];
      bool ok = false;
      for (const char* k : known) ok = ok || flag == k;
      if (!ok) fail(flag, "is not a flag of " + program_);
      if (i + 1 >= argc) fail(flag, "needs a value");
      if (values_.count(flag)) fail(flag, "is given twice");
      values_[flag] = argv[i + 1];
    }
  }
  std::int64_t integer(const std::string& flag, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
    const auto it = values_.find(flag);
    if (it == values_.end()) return fallback;
    const char* text = it->second.c_str();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || v < min || v > max)
      fail(flag, "must be a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" + it->second + "'");
    return v;
  }
  double real(const std::string& flag, double fallback, double min, double max) const {
    const auto it = values_.find(flag);
    if (it == values_.end()) return fallback;
    const char* text = it->second.c_str();
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || !std::isfinite(v) || v < min || v > max)
      fail(flag, "must be a number in [" + show(min) + ", " + show(max) + "], got '" + it->second + "'");
    return v;
  }
  std::string text(const std::string& flag, const std::string& fallback) const {
    const auto it = values_.find(flag);
    if (it == values_.end()) return fallback;
    if (it->second.empty()) fail(flag, "must not be empty");
    return it->second;
  }

 private:
  static std::string show(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
  }
  [[noreturn]] void fail(const std::string& flag, const std::string& why) const {
    throw std::invalid_argument(program_ + ": " + flag + " " + why);
  }
  std::string program_;
  std::map<std::string, std::string> values_;
};

}  // namespace bench
