// Times the CPU backend's loss_and_grad and forward at one batch size on random data, one thread.
// Usage: bench_cpu_step [batch=128] [seconds=2]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;
using Clock = std::chrono::steady_clock;

template <class F>
static void time_it(const char* what, int batch, double seconds, F&& step) {
  for (int i = 0; i < 20; ++i) step();  // warm-up
  long steps = 0;
  const auto t0 = Clock::now();
  double el = 0.0;
  do {
    for (int i = 0; i < 10; ++i) step();
    steps += 10;
    el = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (el < seconds);
  std::printf("%-14s batch %4d: %10.0f samples/s  %8.4f ms/step  (%ld steps, %.2f s)\n", what,
              batch, steps * batch / el, 1e3 * el / steps, steps, el);
}

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  auto backend = nn::make_cpu_backend(batch);
  std::vector<float> params(nn::kMnistCnnParams), grad(nn::kMnistCnnParams);
  nn::glorot_uniform_init(params, 1);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(batch) * nn::kImagePixels);
  for (float& v : x) v = u(rng);
  std::vector<std::uint8_t> labels(batch);
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % nn::kClasses);
  std::vector<float> logits(static_cast<std::size_t>(batch) * nn::kClasses);

  volatile float sink = 0.0f;
  std::printf("backend %s, 1 thread, 1.63 MFLOP/sample for forward+backward\n", backend->name());
  time_it("loss_and_grad", batch, seconds, [&] { sink = sink + backend->loss_and_grad(params, x, labels, grad); });
  time_it("forward", batch, seconds, [&] {
    backend->forward(params, x, logits);
    sink = sink + logits[0];
  });
  return 0;
}
