// defines: bench::RandomBatch, bench::time_it — the inputs and the clock of the CNN step benchmarks
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <random>
#include <vector>

#include "nn/mnist_cnn.h"

namespace bench {

// Glorot-initialised parameters, a gradient buffer, `batch` uniform random images in [0,1),
// random labels and a logits buffer: the same inputs (seeds 1 and 42) for the CPU and GPU runs.
struct RandomBatch {
  explicit RandomBatch(int batch)
      : params(asyncps::nn::kMnistCnnParams), grad(asyncps::nn::kMnistCnnParams),
        x(static_cast<std::size_t>(batch) * asyncps::nn::kImagePixels), labels(static_cast<std::size_t>(batch)),
        logits(static_cast<std::size_t>(batch) * asyncps::nn::kClasses) {
    asyncps::nn::glorot_uniform_init(params, 1);
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& v : x) v = u(rng);
    for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % asyncps::nn::kClasses);
  }
  std::vector<float> params, grad, x;
  std::vector<std::uint8_t> labels;
  std::vector<float> logits;
};

// Runs `step` `warmup` times, then in rounds of 10 until `seconds` have passed; prints one line
// (samples/s, ms/step) and returns ms per step.
template <class F>
double time_it(const char* what, int batch, double seconds, int warmup, F&& step) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) step();
  long steps = 0;
  const auto t0 = Clock::now();
  double el = 0.0;
  do {
    for (int i = 0; i < 10; ++i) step();
    steps += 10;
    el = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (el < seconds);
  const double ms = 1e3 * el / static_cast<double>(steps);
  std::printf("%-22s batch %5d: %10.0f samples/s  %8.4f ms/step  (%ld steps, %.2f s)\n", what, batch,
              static_cast<double>(steps) * batch / el, ms, steps, el);
  return ms;
}

}  // namespace bench
