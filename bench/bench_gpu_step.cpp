// Times one training step of the GPU backend at one batch size on random data: loss_and_grad
// (params and batch uploaded from host memory, gradient downloaded, as a libasyncps worker does)
// plus the host SGD update of the 9098 parameters; and forward alone.
// Usage: bench_gpu_step [batch=128] [seconds=2] [device=0]
// Prints a human line per measurement and, last, one machine-readable line:
//   RESULT impl=asyncps-cudnn batch=<B> ms_per_step=<ms> samples_per_s=<n>
// Exits 77 with one line when there is no GPU (or the build has none).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <vector>

#include "nn/gpu/gpu_backend.h"
#include "bench_batch.h"
#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;


int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  if (batch <= 0 || seconds <= 0.0) {
    std::fprintf(stderr, "usage: bench_gpu_step [batch=128] [seconds=2] [device=0]\n");
    return 2;
  }
  if (nn::gpu_device_count() == 0) {
    std::puts(nn::gpu_backend_built() ? "no GPU: bench_gpu_step not run"
                                      : "no GPU: bench_gpu_step not run (this build has no GPU backend)");
    return 77;
  }
  try {
    auto backend = nn::make_gpu_backend(batch, device);
    bench::RandomBatch in(batch);
    auto& [params, grad, x, labels, logits] = in;

    volatile float sink = 0.0f;
    std::printf("backend %s on device %d\n", backend->name(), device);
    const double step_ms = bench::time_it("train step (sgd)", batch, seconds, 50, [&] {
      sink = sink + backend->loss_and_grad(params, x, labels, grad);
      for (std::size_t i = 0; i < params.size(); ++i) params[i] -= 1e-4f * grad[i];
    });
    bench::time_it("forward", batch, seconds, 50, [&] {
      backend->forward(params, x, logits);
      sink = sink + logits[0];
    });
    std::printf("RESULT impl=asyncps-cudnn batch=%d ms_per_step=%.4f samples_per_s=%.0f\n", batch, step_ms,
                1e3 * batch / step_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
