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
  static const std::vector<TensorSpec> tensors = [] {
    std::vector<TensorSpec> v;
    for (const ArenaTensor& t : kMnistCnnArena) v.push_back({t.name, std::vector<int>(t.dims, t.dims + t.rank)});
    return v;
  }();
  return tensors;
}

}  // namespace asyncps::nn
