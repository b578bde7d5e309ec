// defines: Backend::step_params, Backend::step_grad (the base version: plain host memory)
#include "nn/mnist_cnn.h"

namespace asyncps::nn {

std::span<float> Backend::step_params() {
  if (own_params_.empty()) own_params_.assign(kMnistCnnParams, 0.0f);
  return own_params_;
}

std::span<float> Backend::step_grad() {
  if (own_grad_.empty()) own_grad_.assign(kMnistCnnParams, 0.0f);
  return own_grad_;
}

}  // namespace asyncps::nn
