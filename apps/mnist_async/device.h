// defines: mnist_async::make_backend, mnist_async::local_rank_from_env
// --device cpu|gpu|auto -> the model backend a worker computes with.
#pragma once
#include <memory>
#include <string>

#include "nn/mnist_cnn.h"

namespace mnist_async {

// gpu: the cuDNN backend on device local_rank % gpu_device_count(); a ConfigError if this build has
// no GPU backend or no CUDA device is visible. auto: gpu when the build has it and a device is
// visible, else cpu. cpu: the Eigen backend. local_rank is used only when the launcher does not
// say (OMPI_COMM_WORLD_LOCAL_RANK, then MPI_LOCALRANKID of MPICH/Intel MPI).
std::unique_ptr<asyncps::nn::Backend> make_backend(const std::string& device, int max_batch, int local_rank);

// The node-local rank the MPI launcher put in the environment, or fallback when it put none.
int local_rank_from_env(int fallback);

}  // namespace mnist_async
