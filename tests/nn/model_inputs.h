// defines: nn_test::Batch, random_batch, glorot_params — inputs for whole-model tests
// (shared by the CPU model tests and the GPU-vs-CPU tests).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "nn/mnist_cnn.h"
#include "reference.h"

namespace nn_test {

struct Batch {
  std::vector<float> x;            // (B,784) in [0,1]
  std::vector<std::uint8_t> y;     // (B) in 0..9
};

inline Batch random_batch(int B, std::uint32_t seed) {
  Batch b{ref::random_floats(static_cast<std::size_t>(B) * asyncps::nn::kImagePixels, seed, 0.0f, 1.0f), {}};
  std::mt19937 rng(seed + 1);
  for (int i = 0; i < B; ++i) b.y.push_back(static_cast<std::uint8_t>(rng() % asyncps::nn::kClasses));
  return b;
}

// Every tensor, biases included, Glorot-uniform random.
inline std::vector<float> glorot_params(std::uint64_t seed) {
  std::vector<float> p(asyncps::nn::kMnistCnnParams);
  asyncps::nn::glorot_uniform_init(p, seed);
  return p;
}

}  // namespace nn_test
