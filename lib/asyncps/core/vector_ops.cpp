// defines: scale_into_finite, dc_correct, all_finite, cpu_kernel_level: each compiled once per
// CPU level (vector_ops.inc through cpu/foreach_level.h), the active level's called.
#include "core/vector_ops.h"

#include <bit>
#include <cstdint>
#include <stdexcept>

#include "asyncps/cpu_kernels.h"
#include "asyncps/error.h"
#include "cpu/level.h"

#define ASYNCPS_KERNELS_FILE "core/vector_ops.inc"
#include "cpu/foreach_level.h"

namespace asyncps::detail {

const VectorOps& vector_ops_at(cpu::Level l) {
  switch (l) {
#if defined(__x86_64__)
    case cpu::Level::avx2: return vector_ops::avx2::table;
    case cpu::Level::avx512: return vector_ops::avx512::table;
#endif
    default: return vector_ops::baseline::table;
  }
}

namespace {

// The active level's table, chosen at the first call. Session's constructor calls
// cpu_kernel_level() first, so an unusable ASYNCPS_CPU_KERNELS is a ConfigError there, never
// here (these are noexcept); should it get here, the baseline runs.
const VectorOps& active() noexcept {
  static const VectorOps* t = [] {
    try {
      return &vector_ops_at(cpu::active_level());
    } catch (const std::exception&) {
      return &vector_ops::baseline::table;
    }
  }();
  return *t;
}

}  // namespace

bool scale_into_finite(float* out, const float* in, std::size_t n, float scale) noexcept {
  return active().scale_into_finite(out, in, n, scale);
}

void dc_correct(float* out, const float* g, const float* now, const float* read, std::size_t n, float lambda) noexcept {
  active().dc_correct(out, g, now, read, n, lambda);
}

bool all_finite(const float* v, std::size_t n) noexcept { return active().all_finite(v, n); }

}  // namespace asyncps::detail

namespace asyncps {

std::string cpu_kernel_level() {
  try {
    return cpu::level_name(cpu::active_level());
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
}

}  // namespace asyncps
