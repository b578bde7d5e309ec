#include <catch2/catch.hpp>

#include <cmath>

#include "nn/softmax_xent.h"
#include "reference.h"

TEST_CASE("softmax cross-entropy equals log(10) for zero logits", "[xent]") {
  const int B = 4, C = 10;
  std::vector<float> z(B * C, 0.0f), p(B * C), g(B * C);
  const std::vector<std::uint8_t> y = {0, 3, 9, 5};
  const float loss = asyncps::nn::softmax_xent_forward(z.data(), y.data(), p.data(), B, C);
  CHECK(loss == Approx(std::log(10.0)).epsilon(1e-6));
  for (float v : p) CHECK(v == Approx(0.1f));
}

TEST_CASE("softmax cross-entropy is finite for huge logits", "[xent]") {
  const int B = 2, C = 10;
  std::vector<float> z(B * C, -1e4f), p(B * C), g(B * C);
  z[3] = 1e4f;       // sample 0: confident and right
  z[C + 1] = 1e4f;   // sample 1: confident and wrong (label 7)
  const std::vector<std::uint8_t> y = {3, 7};
  const float loss = asyncps::nn::softmax_xent_forward(z.data(), y.data(), p.data(), B, C);
  asyncps::nn::softmax_xent_backward(p.data(), y.data(), g.data(), B, C);
  REQUIRE(std::isfinite(loss));
  CHECK(loss == Approx((0.0 + 2e4) / 2));  // mean of 0 and (1e4 - (-1e4))
  for (float v : g) REQUIRE(std::isfinite(v));
  CHECK(g[3] == Approx(0.0f).margin(1e-6));
  CHECK(g[C + 7] == Approx(-0.5f));
}

TEST_CASE("softmax cross-entropy gradient matches finite differences", "[xent][grad]") {
  const int B = 3, C = 10;
  const auto z = ref::random_floats(B * C, 41, -3.0f, 3.0f);
  const std::vector<std::uint8_t> y = {2, 0, 9};
  std::vector<float> p(B * C), g(B * C);
  const float loss = asyncps::nn::softmax_xent_forward(z.data(), y.data(), p.data(), B, C);
  asyncps::nn::softmax_xent_backward(p.data(), y.data(), g.data(), B, C);
  CHECK(loss == Approx(ref::xent(ref::to_double(z), y, B, C)).epsilon(1e-5));
  const auto r = ref::check_grad([&](const ref::Vec& v) { return ref::xent(v, y, B, C); },
                                 ref::to_double(z), g, ref::all_indices(z.size()));
  CHECK(r.max_rel < 1e-3);
}
