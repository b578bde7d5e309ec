// defines: nn_test::Batch, random_batch, glorot_params, check_sgd_memorises — inputs for whole-model tests
// (shared by the CPU model tests and the GPU-vs-CPU tests).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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

// max |a - b| / max |b| over [off, off + n): the error relative to the tensor's scale (a
// per-element relative error would be dominated by entries that cancel to ~0 in both backends).
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b, std::size_t off, std::size_t n) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = off; i < off + n; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// Every tensor, biases included, Glorot-uniform random.
inline std::vector<float> glorot_params(std::uint64_t seed) {
  std::vector<float> p(asyncps::nn::kMnistCnnParams);
  asyncps::nn::glorot_uniform_init(p, seed);
  return p;
}

// 200 SGD steps (lr 0.1) on 64 fixed random images with backend `be`: the loss must fall a lot
// and the images be mostly memorised. The same check for every backend.
inline void check_sgd_memorises(asyncps::nn::Backend& be) {
  const int B = 64;
  const auto batch = random_batch(B, 81);
  auto p = glorot_params(11);
  std::vector<float> grad(asyncps::nn::kMnistCnnParams);
  const float first = be.loss_and_grad(p, batch.x, batch.y, grad);
  float last = first;
  for (int step = 0; step < 200; ++step) {
    last = be.loss_and_grad(p, batch.x, batch.y, grad);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= 0.1f * grad[i];  // SGD, lr 0.1
  }
  CAPTURE(first, last);
  REQUIRE(std::isfinite(last));
  CHECK(last < 0.25f * first);
  CHECK(asyncps::nn::count_correct(be, p, batch.x, batch.y) >= 48);  // mostly memorised
}

}  // namespace nn_test
