#include <catch2/catch.hpp>

#include <array>

#include "nn/maxpool.h"
#include "reference.h"

using asyncps::nn::Pool2x2Dims;

TEST_CASE("maxpool picks the max of each 2x2 window and records its index", "[maxpool]") {
  // one 4x4 single-channel image
  const std::vector<float> x = {1, 5, 2, 0,   //
                                3, 4, 9, 9,   //
                                -1, -2, 0, 0, //
                                -3, -4, 0, 7};
  std::vector<float> out(4);
  std::vector<std::int32_t> idx(4);
  asyncps::nn::maxpool2x2_forward(x.data(), out.data(), idx.data(), Pool2x2Dims{1, 4, 4, 1});
  CHECK(out == std::vector<float>{5, 9, -1, 7});
  CHECK(idx == std::vector<std::int32_t>{1, 6, 8, 15});  // ties (9,9): first in scan order
  std::vector<float> dx(16, -1.0f);
  const std::vector<float> dout = {10, 20, 30, 40};
  asyncps::nn::maxpool2x2_backward(dout.data(), idx.data(), dx.data(), Pool2x2Dims{1, 4, 4, 1});
  const std::vector<float> expect = {0, 10, 0, 0, 0, 0, 20, 0, 30, 0, 0, 0, 0, 0, 0, 40};
  CHECK(dx == expect);  // gradient only at the argmax, zero (overwritten) elsewhere
}

TEST_CASE("maxpool breaks ties to the first max in scan order on the vectorised path too",
          "[maxpool]") {
  for (int C : {1, 8, 16}) {
    CAPTURE(C);
    const Pool2x2Dims d{1, 4, 4, C};
    std::vector<float> x(16 * C, 2.0f), out(4 * C);  // all equal: every element ties
    std::vector<std::int32_t> idx(4 * C);
    asyncps::nn::maxpool2x2_forward(x.data(), out.data(), idx.data(), d);
    for (int p = 0; p < 4; ++p)
      for (int c = 0; c < C; ++c) {
        const int i = p / 2, j = p % 2;
        REQUIRE(idx[p * C + c] == ((2 * i) * 4 + 2 * j) * C + c);  // top-left of the window
      }
  }
}

TEST_CASE("maxpool SAME on odd sizes clips the last window and matches the reference",
          "[maxpool]") {
  for (auto [B, H, W, C] : {std::array{2, 5, 7, 3}, std::array{2, 14, 14, 16}, std::array{1, 28, 28, 8}}) {
    CAPTURE(B, H, W, C);
    const Pool2x2Dims d{B, H, W, C};
    const auto x = ref::random_floats(static_cast<std::size_t>(B) * H * W * C, 21);
    std::vector<float> out(static_cast<std::size_t>(B) * d.ph() * d.pw() * C);
    std::vector<std::int32_t> idx(out.size());
    asyncps::nn::maxpool2x2_forward(x.data(), out.data(), idx.data(), d);
    const auto expect = ref::maxpool(ref::to_double(x), B, H, W, C);
    const std::size_t per = static_cast<std::size_t>(H) * W * C, pper = out.size() / B;
    for (std::size_t i = 0; i < out.size(); ++i) {
      REQUIRE(out[i] == static_cast<float>(expect[i]));
      REQUIRE(x[(i / pper) * per + idx[i]] == out[i]);  // the index points at the max
    }
  }
}

TEST_CASE("maxpool backward matches double-precision finite differences", "[maxpool][grad]") {
  const int B = 2, H = 5, W = 7, C = 3;
  const Pool2x2Dims d{B, H, W, C};
  const auto x = ref::random_floats(static_cast<std::size_t>(B) * H * W * C, 22);
  const auto r = ref::random_floats(static_cast<std::size_t>(B) * d.ph() * d.pw() * C, 23);
  std::vector<float> out(r.size()), dx(x.size());
  std::vector<std::int32_t> idx(r.size());
  asyncps::nn::maxpool2x2_forward(x.data(), out.data(), idx.data(), d);
  asyncps::nn::maxpool2x2_backward(r.data(), idx.data(), dx.data(), d);
  const ref::Vec R = ref::to_double(r);
  const auto g = ref::check_grad(
      [&](const ref::Vec& v) { return ref::dot(R, ref::maxpool(v, B, H, W, C)); },
      ref::to_double(x), dx, ref::all_indices(x.size()));
  CHECK(g.max_rel < 1e-3);
}
