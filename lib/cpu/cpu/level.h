// defines: asyncps::cpu::Level, level_name, parse_level, compiled_levels, runnable, best_runnable,
//          choose_level, active_level, kLevelEnv
// The instruction-set levels the CPU kernels are compiled for, and the one that runs. Every hot
// loop of lib/nn and of libasyncps is compiled once per level in the same binary (see
// cpu/foreach_level.h); the best level this CPU runs is chosen once, at the first call, and an
// environment variable (ASYNCPS_CPU_KERNELS) may force a lower one, for tests and for bisecting
// a wrong result. Header-only: lib/nn (which has no libasyncps) and libasyncps share it, and
// active_level()'s one static is one per program (an inline function's static).
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace asyncps::cpu {

// In rising order; a CPU that runs a level runs every level below it.
//   baseline  the architecture's base: x86-64 (SSE2), or aarch64 (NEON)
//   avx2      x86-64 with AVX2 and FMA (x86-64-v3's vector part)
//   avx512    x86-64 with AVX-512 F, VL, BW, DQ (x86-64-v4's vector part)
enum class Level { baseline = 0, avx2 = 1, avx512 = 2 };

inline constexpr const char* kLevelEnv = "ASYNCPS_CPU_KERNELS";

inline const char* level_name(Level l) {
  switch (l) {
    case Level::avx2: return "avx2";
    case Level::avx512: return "avx512";
    case Level::baseline: break;
  }
  return "baseline";
}

// The levels this build holds code for, lowest first (x86-64: all three; elsewhere: baseline).
inline std::vector<Level> compiled_levels() {
#if defined(__x86_64__)
  return {Level::baseline, Level::avx2, Level::avx512};
#else
  return {Level::baseline};
#endif
}

// Whether this CPU (and its OS, which must save the wider registers) runs level l.
inline bool runnable(Level l) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (l) {
    case Level::baseline: return true;
    case Level::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Level::avx512:
      return runnable(Level::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return l == Level::baseline;
#endif
}

// The highest compiled level this CPU runs.
inline Level best_runnable() {
  Level best = Level::baseline;
  for (Level l : compiled_levels())
    if (runnable(l)) best = l;
  return best;
}

inline std::string level_list(const std::vector<Level>& levels) {
  std::string s;
  for (Level l : levels) s += (s.empty() ? "" : ", ") + std::string(level_name(l));
  return s;
}

// The level named s; std::invalid_argument naming the variable and the compiled levels otherwise.
inline Level parse_level(std::string_view s) {
  for (Level l : compiled_levels())
    if (s == level_name(l)) return l;
  throw std::invalid_argument(std::string(kLevelEnv) + "=" + std::string(s) + ": not a CPU kernel level of this build (" +
                              level_list(compiled_levels()) + ")");
}

// The level to run given the variable's value (null or empty: not set): the best this CPU runs,
// or the one named, which must be compiled and runnable here (std::invalid_argument otherwise).
inline Level choose_level(const char* forced) {
  if (forced == nullptr || *forced == '\0') return best_runnable();
  const Level l = parse_level(forced);
  if (!runnable(l)) {
    std::vector<Level> ok;
    for (Level c : compiled_levels())
      if (runnable(c)) ok.push_back(c);
    throw std::invalid_argument(std::string(kLevelEnv) + "=" + forced + ": this CPU cannot run it (it runs " +
                                level_list(ok) + ")");
  }
  return l;
}

// The level every dispatched kernel of this process runs, chosen at the first call from this
// CPU and ASYNCPS_CPU_KERNELS; throws std::invalid_argument (every call) when that variable is
// unusable.
inline Level active_level() {
  static const Level level = choose_level(std::getenv(kLevelEnv));
  return level;
}

}  // namespace asyncps::cpu
