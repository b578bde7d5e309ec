// main of test_nn_gpu: without a visible CUDA device, one line and exit code 77, which ctest
// reports as skipped (SKIP_RETURN_CODE 77 on nn_gpu_backend); otherwise the Catch2 session.
#include "catch_run.h"  // (Catch's implementation: tests/catch_impl.cpp)

#include <cstdio>

#include "nn/gpu/gpu_backend.h"

int main(int argc, char** argv) {
  if (asyncps::nn::gpu_device_count() == 0) {
    std::puts(asyncps::nn::gpu_backend_built() ? "no GPU: GPU tests not run"
                                               : "no GPU: GPU tests not run (this build has no GPU backend)");
    return 77;
  }
  return asyncps_test::run_catch(argc, argv);
}
