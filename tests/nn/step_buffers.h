// defines: nn_test::check_step_buffers, check_while_computing — what every backend promises about
// step_params()/step_grad() and set_while_computing (the CPU tests and the GPU tests run them).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "model_inputs.h"
#include "nn/mnist_cnn.h"

namespace nn_test {

// A step given the backend's own buffers equals, bit for bit, the same step given the caller's
// vectors (a batch of images, and rows of a dataset), replays read the buffers' new contents, and
// calls given other spans never write step_params() nor step_grad().
inline void check_step_buffers(asyncps::nn::Backend& be, int B) {
  namespace nn = asyncps::nn;
  const std::span<float> P = be.step_params(), G = be.step_grad();
  REQUIRE(P.size() == nn::kMnistCnnParams);
  REQUIRE(G.size() == nn::kMnistCnnParams);
  CHECK(be.step_params().data() == P.data());  // the same buffers every time
  CHECK(be.step_grad().data() == G.data());
  CHECK((P.data() + P.size() <= G.data() || G.data() + G.size() <= P.data()));  // apart
  const auto batch = random_batch(B, 4100 + static_cast<std::uint32_t>(B));
  be.set_dataset(batch.x, batch.y);
  std::vector<std::int32_t> rows(static_cast<std::size_t>(B));
  for (int b = 0; b < B; ++b) rows[static_cast<std::size_t>(b)] = (b * 7) % B;
  for (const std::uint64_t seed : {11u, 12u}) {  // the second: a replay must read the new parameters
    CAPTURE(seed);
    const auto p = glorot_params(seed);
    std::vector<float> g(nn::kMnistCnnParams, std::numeric_limits<float>::quiet_NaN());
    std::copy(p.begin(), p.end(), P.begin());
    std::fill(G.begin(), G.end(), std::numeric_limits<float>::quiet_NaN());
    const float own_loss = be.loss_and_grad(P, batch.x, batch.y, G);
    const float loss = be.loss_and_grad(p, batch.x, batch.y, g);
    CHECK(own_loss == loss);
    CHECK(std::equal(G.begin(), G.end(), g.begin()));
    // mixed: own parameters with the caller's gradient, and the other way round
    std::vector<float> g2(nn::kMnistCnnParams, std::numeric_limits<float>::quiet_NaN());
    CHECK(be.loss_and_grad_rows(P, rows, g2) == be.loss_and_grad_rows(p, rows, g));
    CHECK(std::equal(g2.begin(), g2.end(), g.begin()));
    CHECK(be.loss_and_grad_rows(p, rows, G) == be.loss_and_grad_rows(P, rows, g2));
    CHECK(std::equal(G.begin(), G.end(), g2.begin()));
    // other spans leave both buffers alone (the GPU stages them through buffers of its own)
    const std::vector<float> p_before(P.begin(), P.end()), g_before(G.begin(), G.end());
    const auto other = glorot_params(seed + 100);
    std::vector<float> logits(static_cast<std::size_t>(B) * nn::kClasses);
    be.loss_and_grad(other, batch.x, batch.y, g);
    be.loss_and_grad_rows(other, rows, g);
    be.forward(other, batch.x, logits);
    CHECK(std::equal(P.begin(), P.end(), p_before.begin()));
    CHECK(std::equal(G.begin(), G.end(), g_before.begin()));
    // forward from the own parameters equals forward from a copy
    std::vector<float> logits_own(logits.size());
    be.forward(P, batch.x, logits_own);
    be.forward(p, batch.x, logits);
    CHECK(logits_own == logits);
  }
}

// The function given to set_while_computing runs during a step on the calling thread (exactly
// `calls_a_step` times, or where that is -1 at least once: a GPU backend calls it while the
// device is not done), never in forward(); the step's result is the same with it; an exception
// from it leaves the step (where it is called); an empty function removes it.
inline void check_while_computing(asyncps::nn::Backend& be, int B, int calls_a_step) {
  namespace nn = asyncps::nn;
  const auto batch = random_batch(B, 77);
  const auto p = glorot_params(5);
  std::vector<float> g0(nn::kMnistCnnParams), g1(nn::kMnistCnnParams);
  const float loss0 = be.loss_and_grad(p, batch.x, batch.y, g0);
  int calls = 0;
  be.set_while_computing([&calls] { ++calls; });
  const float loss1 = be.loss_and_grad(p, batch.x, batch.y, g1);
  if (calls_a_step >= 0) CHECK(calls == calls_a_step);
  else CHECK(calls >= 1);
  CHECK(loss1 == loss0);
  CHECK(g1 == g0);
  const int after_step = calls;
  std::vector<float> logits(static_cast<std::size_t>(B) * nn::kClasses);
  be.forward(p, batch.x, logits);
  CHECK(calls == after_step);
  be.set_while_computing([] { throw std::runtime_error("the transport failed"); });
  if (calls_a_step == 0) CHECK_NOTHROW(be.loss_and_grad(p, batch.x, batch.y, g1));  // (never called)
  else CHECK_THROWS_WITH(be.loss_and_grad(p, batch.x, batch.y, g1), "the transport failed");
  be.set_while_computing({});
  calls = 0;
  CHECK(be.loss_and_grad(p, batch.x, batch.y, g1) == loss0);  // the backend is whole after the exception
  CHECK(g1 == g0);
  CHECK(calls == 0);
}

}  // namespace nn_test
