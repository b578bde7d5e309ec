// Times the CPU backend's loss_and_grad and forward at one batch size on random data, one thread.
// Usage: bench_cpu_step [batch=128] [seconds=2]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_batch.h"
#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;


int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  auto backend = nn::make_cpu_backend(batch);
  bench::RandomBatch in(batch);
  auto& [params, grad, x, labels, logits] = in;

  volatile float sink = 0.0f;
  std::printf("backend %s, 1 thread, 1.63 MFLOP/sample for forward+backward\n", backend->name());
  bench::time_it("loss_and_grad", batch, seconds, 20, [&] { sink = sink + backend->loss_and_grad(params, x, labels, grad); });
  bench::time_it("forward", batch, seconds, 20, [&] {
    backend->forward(params, x, logits);
    sink = sink + logits[0];
  });
  return 0;
}
