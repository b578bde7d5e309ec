// libasyncps's loops over whole arenas (core/vector_ops) at every CPU level this machine runs,
// against scalar loops: the scaled copy and its finiteness, DC-ASGD's correction, the
// non-finite guard with one NaN or Inf at every position class (the vector body, the tail), at
// lengths 1, 7, 128, odd and the MNIST arena. And the level the library runs: the best, or the
// one ASYNCPS_CPU_KERNELS forces (core_vector_ops_forced_* run this file with each).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "asyncps/cpu_kernels.h"
#include "asyncps/error.h"
#include "asyncps_internal/core/vector_ops.h"

namespace cpu = asyncps::cpu;
using asyncps::detail::vector_ops_at;

namespace {

std::vector<float> randoms(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

}  // namespace

TEST_CASE("every CPU level this machine runs: scale_into_finite, dc_correct and all_finite match scalar loops",
          "[vector-ops]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (cpu::Level l : cpu::compiled_levels()) {
    if (!cpu::runnable(l)) {
      WARN("this CPU cannot run CPU level " << cpu::level_name(l) << ": compiled, not tested here");
      continue;
    }
    const auto& ops = vector_ops_at(l);
    for (std::size_t n : {1u, 7u, 128u, 1001u, 9098u}) {
      CAPTURE(cpu::level_name(l), n);
      const auto g = randoms(n, 1), now = randoms(n, 2), read = randoms(n, 3);
      std::vector<float> out(n, -1.0f);
      CHECK(ops.scale_into_finite(out.data(), g.data(), n, 0.5f));
      for (std::size_t i = 0; i < n; ++i) REQUIRE(out[i] == 0.5f * g[i]);
      CHECK(ops.all_finite(g.data(), n));
      ops.dc_correct(out.data(), g.data(), now.data(), read.data(), n, 0.04f);
      for (std::size_t i = 0; i < n; ++i)
        REQUIRE(out[i] == Approx(g[i] + 0.04 * double(g[i]) * g[i] * (now[i] - read[i])).margin(1e-6));
      for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
        for (float bad : {inf, -inf, nan}) {
          auto v = g;
          v[at] = bad;
          CAPTURE(at, bad);
          REQUIRE_FALSE(ops.all_finite(v.data(), n));
          REQUIRE_FALSE(ops.scale_into_finite(out.data(), v.data(), n, 1.0f));
        }
        auto big = g;  // finite in, Inf out: 3e38 * 4 overflows
        big[at] = 3e38f;
        REQUIRE_FALSE(ops.scale_into_finite(out.data(), big.data(), n, 4.0f));
      }
    }
  }
}

TEST_CASE("libasyncps runs the best CPU level this machine runs, or the one ASYNCPS_CPU_KERNELS forces",
          "[vector-ops]") {
  const char* forced = std::getenv(cpu::kLevelEnv);
  if (forced && *forced && !cpu::runnable(cpu::parse_level(forced))) {  // refused, naming the variable
    CHECK_THROWS_MATCHES(asyncps::cpu_kernel_level(), asyncps::ConfigError,
                         Catch::Message(std::string("ASYNCPS_CPU_KERNELS=") + forced +
                                        ": this CPU cannot run it (it runs " +
                                        (cpu::runnable(cpu::Level::avx2) ? "baseline, avx2)" : "baseline)")));
    return;
  }
  const std::string expect = forced && *forced ? forced : cpu::level_name(cpu::best_runnable());
  CHECK(asyncps::cpu_kernel_level() == expect);
}
