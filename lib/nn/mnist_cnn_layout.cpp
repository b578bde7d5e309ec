// defines: mnist_cnn_layout
#include "nn/mnist_cnn_layout.h"

#include <cstdint>
#include <vector>

#include "nn/mnist_cnn.h"

namespace asyncps::nn {

ParamLayout mnist_cnn_layout() {
  ParamLayout layout;
  for (const ArenaTensor& t : kMnistCnnArena) layout.add(t.name, std::vector<std::int64_t>(t.dims, t.dims + t.rank));
  return layout;
}

}  // namespace asyncps::nn
