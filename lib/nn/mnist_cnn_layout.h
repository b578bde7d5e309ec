// defines: asyncps::nn::mnist_cnn_layout
// The CNN's arena as a libasyncps ParamLayout (the same tensors, names, shapes and order as
// kMnistCnnArena): what the job, its tests and benchmarks hand to asyncps::Session.
// The one join of asyncps_nn and libasyncps, header-only so that asyncps_nn links neither
// libasyncps nor MPI: a target that includes it links asyncps_mnist_cnn_layout (asyncps_nn and
// asyncps).
#pragma once
#include <cstdint>
#include <vector>

#include "asyncps/param_layout.h"
#include "nn/mnist_cnn.h"

namespace asyncps::nn {

inline ParamLayout mnist_cnn_layout() {
  ParamLayout layout;
  for (const ArenaTensor& t : kMnistCnnArena) layout.add(t.name, std::vector<std::int64_t>(t.dims, t.dims + t.rank));
  return layout;
}

}  // namespace asyncps::nn
