// defines: asyncps::nn::mnist_cnn_layout
// The CNN's arena as a libasyncps ParamLayout (the same tensors, names, shapes and order as
// kMnistCnnArena): what the job, its tests and benchmarks hand to asyncps::Session.
#pragma once
#include "asyncps/param_layout.h"

namespace asyncps::nn {

ParamLayout mnist_cnn_layout();

}  // namespace asyncps::nn
