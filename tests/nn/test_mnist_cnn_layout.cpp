// The CNN's arena as a libasyncps ParamLayout (the join, "nn/mnist_cnn_layout.h"): the one
// test of test_nn_layout, which links libasyncps; test_nn links neither it nor MPI.
#include <catch2/catch.hpp>

#include <cstddef>

#include "nn/mnist_cnn.h"
#include "nn/mnist_cnn_layout.h"

namespace nn = asyncps::nn;

TEST_CASE("one arena description: the tensor list, the offsets and the asyncps layout agree", "[model]") {
  const auto layout = nn::mnist_cnn_layout();
  const auto& specs = nn::mnist_cnn_tensors();
  REQUIRE(layout.tensors().size() == static_cast<std::size_t>(nn::kMnistCnnTensors));
  REQUIRE(specs.size() == layout.tensors().size());
  CHECK(layout.size() == nn::kMnistCnnParams);
  for (int i = 0; i < nn::kMnistCnnTensors; ++i) {
    const auto& t = layout.tensors()[static_cast<std::size_t>(i)];
    CHECK(t.name == nn::kMnistCnnArena[i].name);
    CHECK(t.name == specs[static_cast<std::size_t>(i)].name);
    CHECK(t.offset == nn::mnist_cnn_offset(i));
    CHECK(t.size == specs[static_cast<std::size_t>(i)].size());
  }
  CHECK(nn::mnist_cnn_offset(nn::kFcW) == 3 * 3 * 1 * 8 + 8 + 3 * 3 * 8 * 16 + 16);  // the backends' old literal
}
