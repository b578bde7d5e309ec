// Model description: the parameter tensors in arena order.
#include <functional>
#include <numeric>

#include "nn/mnist_cnn.h"

namespace asyncps::nn {

std::size_t TensorSpec::size() const {
  return std::accumulate(dims.begin(), dims.end(), std::size_t{1},
                         [](std::size_t a, int d) { return a * static_cast<std::size_t>(d); });
}

const std::vector<TensorSpec>& mnist_cnn_tensors() {
  static const std::vector<TensorSpec> tensors = {
      {"conv1_w", {3, 3, 1, 8}},  {"conv1_b", {8}},     {"conv2_w", {3, 3, 8, 16}},
      {"conv2_b", {16}},          {"fc_w", {784, 10}},  {"fc_b", {10}},
  };
  return tensors;
}

}  // namespace asyncps::nn
