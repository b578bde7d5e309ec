// defines: asyncps::cpu_kernel_level
// libasyncps's loops over whole arenas (staging a push, the non-finite guard, DC-ASGD's
// correction) are compiled once per CPU instruction-set level (baseline, avx2, avx512 on x86-64;
// baseline on aarch64) and the best one this CPU runs is chosen at the first call.
// ASYNCPS_CPU_KERNELS=<level> forces a lower one, for tests and for bisecting a wrong result;
// an unknown level, or one this CPU cannot run, is refused (ConfigError) by Session's constructor.
#pragma once

#include <string>

namespace asyncps {

// The level that runs, e.g. "avx2"; ConfigError naming ASYNCPS_CPU_KERNELS when it is unusable.
std::string cpu_kernel_level();

}  // namespace asyncps
