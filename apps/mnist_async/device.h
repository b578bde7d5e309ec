// defines: mnist_async::make_backend
// --device cpu|gpu|auto (and --gpu_kernels, --gpu_eager) -> the model backend a worker computes with.
#pragma once
#include <memory>
#include <string>

#include "nn/mnist_cnn.h"
#include "options.h"

namespace mnist_async {

// gpu: the GPU backend (--gpu_kernels, one CUDA graph a step unless --gpu_eager) on device
// node_worker_index % gpu_device_count(): a node's GPUs dealt over its workers in rank order
// (asyncps::Session::node_worker_index, from MPI_COMM_TYPE_SHARED: the same under mpirun, hydra
// and srun); a ConfigError if this build has no GPU backend or no CUDA device is visible.
// auto: gpu when the build has it and a device is visible, else cpu. cpu: the Eigen backend.
std::unique_ptr<asyncps::nn::Backend> make_backend(const Config& config, int max_batch, int node_worker_index);

}  // namespace mnist_async
