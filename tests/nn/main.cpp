// test_nn's main: Catch2's, except that when ASYNCPS_CPU_KERNELS forces a level this CPU cannot
// run (the nn_kernels_forced_* runs on a machine without it), it says so and exits 77 (skipped).
#include "catch_run.h"  // (Catch's implementation: tests/catch_impl.cpp)

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "cpu/level.h"

int main(int argc, char** argv) {
  const char* forced = std::getenv(asyncps::cpu::kLevelEnv);
  if (forced && *forced) {
    try {
      asyncps::cpu::choose_level(forced);
    } catch (const std::invalid_argument& e) {
      if (!asyncps::cpu::runnable(asyncps::cpu::parse_level(forced))) {
        std::printf("%s: not run here\n", e.what());
        return 77;
      }
      throw;
    }
    std::printf("CPU kernels forced to %s\n", forced);
  }
  return asyncps_test::run_catch(argc, argv);
}
