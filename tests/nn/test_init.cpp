#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "nn/mnist_cnn.h"
#include "nn/error.h"

namespace nn = asyncps::nn;

TEST_CASE("the parameter arena holds the 6 tensors in TF order and shapes", "[init]") {
  const auto& t = nn::mnist_cnn_tensors();
  REQUIRE(t.size() == 6);
  CHECK(t[0].name == "conv1_w");
  CHECK(t[0].dims == std::vector<int>{3, 3, 1, 8});
  CHECK(t[1].dims == std::vector<int>{8});
  CHECK(t[2].dims == std::vector<int>{3, 3, 8, 16});
  CHECK(t[3].dims == std::vector<int>{16});
  CHECK(t[4].dims == std::vector<int>{784, 10});
  CHECK(t[5].name == "fc_b");
  CHECK(t[5].dims == std::vector<int>{10});
  std::size_t total = 0;
  for (const auto& s : t) total += s.size();
  CHECK(total == nn::kMnistCnnParams);
}

TEST_CASE("glorot init: values within each tensor's limit with variance limit^2/3", "[init]") {
  std::vector<float> p(nn::kMnistCnnParams);
  nn::glorot_uniform_init(p, 123);
  // limit = sqrt(6/(fan_in+fan_out)), written out per tensor
  const double limits[6] = {std::sqrt(6.0 / (9 + 72)),    std::sqrt(6.0 / (8 + 8)),
                            std::sqrt(6.0 / (72 + 144)),  std::sqrt(6.0 / (16 + 16)),
                            std::sqrt(6.0 / (784 + 10)),  std::sqrt(6.0 / (10 + 10))};
  std::size_t off = 0;
  const auto& t = nn::mnist_cnn_tensors();
  for (int k = 0; k < 6; ++k) {
    const std::size_t n = t[k].size();
    CAPTURE(t[k].name, n, limits[k]);
    double s = 0.0, s2 = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = p[off + i];
      REQUIRE(std::abs(v) <= limits[k]);
      s += v;
      s2 += v * v;
    }
    const double mean = s / n, var = (s2 - n * mean * mean) / (n - 1);
    const double expect = limits[k] * limits[k] / 3.0;
    // sample variance of a uniform has relative std sqrt(0.8/n): allow 5 of them
    if (n >= 64) CHECK(std::abs(var / expect - 1.0) < 5.0 * std::sqrt(0.8 / n));
    CHECK(var > 0.0);
    off += n;
  }
}

TEST_CASE("glorot init is deterministic in the seed", "[init]") {
  std::vector<float> a(nn::kMnistCnnParams), b(nn::kMnistCnnParams), c(nn::kMnistCnnParams);
  nn::glorot_uniform_init(a, 7);
  nn::glorot_uniform_init(b, 7);
  nn::glorot_uniform_init(c, 8);
  CHECK(a == b);
  CHECK(a != c);
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += (a[i] == c[i]);
  CHECK(same < 10);
}

TEST_CASE("glorot init rejects a wrongly sized arena", "[init]") {
  std::vector<float> p(nn::kMnistCnnParams - 1);
  CHECK_THROWS_AS(nn::glorot_uniform_init(p, 1), nn::Error);
}
