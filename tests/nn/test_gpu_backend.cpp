// The GPU (cuDNN/cuBLAS) backend against the CPU backend: same logits, loss and every gradient
// tensor on random inputs and parameters at batch sizes 1, 7 and 128; deterministic; the same
// input checks; and a short training run whose loss falls. Run only where a GPU is visible
// (gpu_main.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/gpu/gpu_backend.h"
#include "nn/mnist_cnn.h"
#include "model_inputs.h"
#include "reference.h"
#include "nn/error.h"

namespace nn = asyncps::nn;

namespace {

using nn_test::Batch;
using nn_test::random_batch;

// max |a - b| / max |b| over [off, off + n): the error relative to the tensor's scale. (A per-element
// relative error would be dominated by gradient entries that cancel to ~0 in both backends.)
double rel_error(const std::vector<float>& a, const std::vector<float>& b, std::size_t off, std::size_t n) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = off; i < off + n; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

}  // namespace

TEST_CASE("the gpu backend is built and sees a device", "[gpu]") {
  CHECK(nn::gpu_backend_built());
  CHECK(nn::gpu_device_count() > 0);
  auto be = nn::make_gpu_backend(16, 0);
  CHECK(std::string(be->name()) == "gpu");
  CHECK(be->max_batch() == 16);
}

// Tolerance 1e-4 relative to each tensor's scale. Both backends compute in FP32 (the GPU one with
// deterministic FMA-math cuDNN algorithms, no TF32) but sum in different orders; a sum over
// B*28*28 terms (conv1's filter gradient at B=128) differs by ~1e-6 relative. A 2x2 pooling window
// whose two largest inputs differ by less than that rounding could route a gradient differently;
// with random inputs that has probability ~1e-6 per window, and the seeds below are fixed.
TEST_CASE("gpu backend logits, loss and every gradient equal the cpu backend's", "[gpu]") {
  auto gpu = nn::make_gpu_backend(128, 0);  // one instance for all sizes: algorithms chosen per batch
  auto cpu = nn::make_cpu_backend(128);
  const auto& tensors = nn::mnist_cnn_tensors();
  for (const int B : {1, 7, 128}) {
    for (const std::uint32_t seed : {11u, 12u}) {
      CAPTURE(B, seed);
      const auto batch = random_batch(B, 1000 * seed + B);
      const auto p = nn_test::glorot_params(seed);
      std::vector<float> lg(static_cast<std::size_t>(B) * nn::kClasses), lc(lg.size());
      gpu->forward(p, batch.x, lg);
      cpu->forward(p, batch.x, lc);
      CHECK(rel_error(lg, lc, 0, lg.size()) <= 1e-4);

      std::vector<float> gg(nn::kMnistCnnParams, std::numeric_limits<float>::quiet_NaN());
      std::vector<float> gc(nn::kMnistCnnParams);
      const float loss_g = gpu->loss_and_grad(p, batch.x, batch.y, gg);
      const float loss_c = cpu->loss_and_grad(p, batch.x, batch.y, gc);
      CHECK(std::abs(loss_g - loss_c) <= 1e-4 * std::abs(loss_c));
      std::size_t off = 0;
      for (const auto& t : tensors) {
        const double e = rel_error(gg, gc, off, t.size());
        CAPTURE(t.name, e);
        CHECK(e <= 1e-4);
        off += t.size();
      }
      for (float g : gg) REQUIRE(std::isfinite(g));
    }
  }
}

TEST_CASE("gpu backend steps are deterministic and independent of earlier calls", "[gpu]") {
  auto gpu = nn::make_gpu_backend(32, 0);
  const auto p = nn_test::glorot_params(21);
  const auto a = random_batch(32, 22), b = random_batch(5, 23);
  std::vector<float> g1(nn::kMnistCnnParams), g2(nn::kMnistCnnParams), g3(nn::kMnistCnnParams);
  const float l1 = gpu->loss_and_grad(p, a.x, a.y, g1);
  gpu->loss_and_grad(p, b.x, b.y, g3);  // a different batch size in between
  const float l2 = gpu->loss_and_grad(p, a.x, a.y, g2);
  CHECK(l1 == l2);
  CHECK(g1 == g2);
}

TEST_CASE("gpu backend rejects wrong span sizes and oversized batches", "[gpu]") {
  auto be = nn::make_gpu_backend(4, 0);
  const auto p = nn_test::glorot_params(1);
  const auto batch = random_batch(4, 2);
  std::vector<float> grad(nn::kMnistCnnParams), logits(4 * nn::kClasses);
  CHECK_THROWS_AS(be->loss_and_grad(std::span(p).first(10), batch.x, batch.y, grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, std::span(batch.x).first(100), batch.y, grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, {}, {}, grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, batch.x, std::span(batch.y).first(3), grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, batch.x, batch.y, std::span(grad).first(5)), nn::Error);
  auto bad = batch.y;
  bad[2] = 10;
  CHECK_THROWS_AS(be->loss_and_grad(p, batch.x, bad, grad), nn::Error);
  const auto big = random_batch(5, 3);
  std::vector<float> big_logits(5 * nn::kClasses);
  CHECK_THROWS_AS(be->forward(p, big.x, big_logits), nn::Error);
  CHECK_THROWS_AS(be->forward(p, batch.x, std::span(logits).first(7)), nn::Error);
  CHECK_THROWS_AS(nn::make_gpu_backend(0, 0), nn::Error);
  CHECK_THROWS_AS(nn::make_gpu_backend(4, nn::gpu_device_count()), nn::Error);
}

TEST_CASE("200 SGD steps on the GPU on 64 fixed random images make the loss fall a lot", "[gpu][train]") {
  auto be = nn::make_gpu_backend(64, 0);
  nn_test::check_sgd_memorises(*be);
}
