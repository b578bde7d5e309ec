#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "nn/mnist_cnn.h"
#include "model_inputs.h"
#include "step_buffers.h"
#include "reference.h"
#include "nn/error.h"

namespace nn = asyncps::nn;

namespace {

using nn_test::Batch;
using nn_test::random_batch;

}  // namespace

TEST_CASE("cpu backend forward and loss match the double-precision reference model", "[model]") {
  const int B = 5;
  const auto batch = random_batch(B, 51);
  const auto p = nn_test::glorot_params(3);
  auto be = nn::make_cpu_backend(8);
  std::vector<float> logits(B * nn::kClasses), grad(nn::kMnistCnnParams);
  be->forward(p, batch.x, logits);
  const auto expect = ref::model_logits(ref::to_double(p), ref::to_double(batch.x), B);
  for (int i = 0; i < B * nn::kClasses; ++i) REQUIRE(logits[i] == Approx(expect[i]).margin(1e-4));
  const float loss = be->loss_and_grad(p, batch.x, batch.y, grad);
  CHECK(loss == Approx(ref::model_loss(ref::to_double(p), ref::to_double(batch.x), batch.y, B))
                    .epsilon(1e-5));
}

TEST_CASE("cpu backend gradient matches double-precision finite differences of the whole model",
          "[model][grad]") {
  const int B = 3;
  const auto batch = random_batch(B, 61);
  const auto p = nn_test::glorot_params(5);
  auto be = nn::make_cpu_backend(B);
  std::vector<float> grad(nn::kMnistCnnParams, std::numeric_limits<float>::quiet_NaN());
  be->loss_and_grad(p, batch.x, batch.y, grad);  // grad is overwritten, NaN must be gone

  // every conv parameter (the first 1248) and a random sample of 1500 of the fc parameters (under
  // the sanitizers a sample of each, ref::fd_indices)
  std::vector<std::size_t> idx = ref::fd_indices(1248);
  std::mt19937 rng(62);
  std::vector<std::size_t> fc = ref::all_indices(nn::kMnistCnnParams);
  fc.erase(fc.begin(), fc.begin() + 1248);
  std::shuffle(fc.begin(), fc.end(), rng);
  idx.insert(idx.end(), fc.begin(), fc.begin() + (ref::sanitized() ? 200 : 1500));
  for (std::size_t i = 9088; i < 9098; ++i) idx.push_back(i);  // all fc biases

  const ref::Vec X = ref::to_double(batch.x);
  const auto r = ref::check_grad(
      [&](const ref::Vec& v) { return ref::model_loss(v, X, batch.y, B); }, ref::to_double(p),
      grad, idx);
  CAPTURE(r.checked, r.max_rel);
  CHECK(r.max_rel < 1e-3);
  for (float g : grad) REQUIRE(std::isfinite(g));
}

TEST_CASE("loss and gradient do not depend on max_batch or on earlier calls", "[model]") {
  const auto p = nn_test::glorot_params(9);
  const auto big = random_batch(16, 71), small = random_batch(4, 72);
  auto a = nn::make_cpu_backend(16), b = nn::make_cpu_backend(4);
  std::vector<float> ga(nn::kMnistCnnParams), gb(nn::kMnistCnnParams);
  a->loss_and_grad(p, big.x, big.y, ga);  // dirty the scratch with a larger batch
  const float la = a->loss_and_grad(p, small.x, small.y, ga);
  const float lb = b->loss_and_grad(p, small.x, small.y, gb);
  CHECK(la == lb);
  CHECK(ga == gb);
}

TEST_CASE("a cpu step given the backend's own buffers equals one given the caller's, which leave them alone",
          "[model][step-buffers]") {
  auto be = nn::make_cpu_backend(32);
  nn_test::check_step_buffers(*be, 32);
}

TEST_CASE("the cpu backend, computing on the calling thread, never calls the while-computing function",
          "[model][while-computing]") {
  auto be = nn::make_cpu_backend(8);
  nn_test::check_while_computing(*be, 8, 0);
}

TEST_CASE("200 SGD steps on 64 fixed random images make the loss fall a lot", "[model][train]") {
  auto be = nn::make_cpu_backend(64);
  nn_test::check_sgd_memorises(*be);
}

TEST_CASE("count_correct counts argmax hits in chunks of max_batch", "[model]") {
  const int n = 23;
  const auto batch = random_batch(n, 91);
  const auto p = nn_test::glorot_params(13);
  auto be = nn::make_cpu_backend(5);  // 5 chunks, the last one partial
  std::vector<float> logits(nn::kClasses);
  std::size_t expect = 0;
  for (int i = 0; i < n; ++i) {
    be->forward(p, std::span<const float>(batch.x).subspan(i * nn::kImagePixels, nn::kImagePixels),
                logits);
    expect += (std::max_element(logits.begin(), logits.end()) - logits.begin()) == batch.y[i];
  }
  CHECK(nn::count_correct(*be, p, batch.x, batch.y) == expect);
  CHECK(nn::count_correct(*be, p, {}, {}) == 0);
  CHECK_THROWS_AS(nn::count_correct(*be, p, batch.x, std::span(batch.y).first(3)),
                  nn::Error);
}

TEST_CASE("cpu backend rejects wrong span sizes and oversized batches", "[model]") {
  auto be = nn::make_cpu_backend(4);
  CHECK(std::string(be->name()) == "cpu");
  CHECK(be->max_batch() == 4);
  const auto p = nn_test::glorot_params(1);
  const auto ok = random_batch(4, 1), big = random_batch(5, 2);
  std::vector<float> grad(nn::kMnistCnnParams), logits(4 * nn::kClasses);
  std::vector<float> short_p(p.begin(), p.end() - 1);
  CHECK_NOTHROW(be->loss_and_grad(p, ok.x, ok.y, grad));
  CHECK_THROWS_AS(be->loss_and_grad(short_p, ok.x, ok.y, grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, big.x, big.y, grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, std::span(ok.x).first(100), ok.y, grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, ok.x, std::span(ok.y).first(3), grad), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, ok.x, ok.y, std::span(grad).first(10)), nn::Error);
  CHECK_THROWS_AS(be->loss_and_grad(p, {}, {}, grad), nn::Error);
  auto bad = ok.y;
  bad[0] = 10;
  CHECK_THROWS_AS(be->loss_and_grad(p, ok.x, bad, grad), nn::Error);
  CHECK_NOTHROW(be->forward(p, ok.x, logits));
  CHECK_THROWS_AS(be->forward(p, ok.x, std::span(logits).first(39)), nn::Error);
  CHECK_THROWS_AS(be->forward(p, big.x, logits), nn::Error);
  CHECK_THROWS_AS(nn::make_cpu_backend(0), nn::Error);
}
