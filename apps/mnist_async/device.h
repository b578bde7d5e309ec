// defines: mnist_async::make_backend
// --device cpu|gpu|auto -> the model backend a worker computes with.
#pragma once
#include <memory>
#include <string>

#include "nn/mnist_cnn.h"

namespace mnist_async {

// gpu: the cuDNN backend on GPU (local_rank % device_count); an error if this build has no GPU
// backend or the machine no GPU. auto: gpu when it can, else cpu. cpu: the Eigen backend.
std::unique_ptr<asyncps::nn::Backend> make_backend(const std::string& device, int max_batch, int local_rank);

}  // namespace mnist_async
