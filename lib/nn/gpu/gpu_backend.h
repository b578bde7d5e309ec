// defines: asyncps::nn::make_gpu_backend, gpu_device_count, gpu_backend_built
// The GPU (cuDNN + cuBLAS) backend of the MNIST CNN, behind nn::Backend. This header is
// CUDA-free on purpose: apps and tests include it whether or not the build has CUDA. In a build
// without CUDA (ASYNCPS_CUDA_ENABLED off) the definitions come from gpu_stub.cpp.
#pragma once
#include <memory>

#include "nn/mnist_cnn.h"
#include "nn/error.h"

namespace asyncps::nn {

// True when this build compiled the CUDA backend (CUDA + cuDNN found at configure time).
bool gpu_backend_built() noexcept;

// Number of CUDA devices visible to this process; 0 when the build has no GPU backend, there is
// no driver, no device, or CUDA_VISIBLE_DEVICES hides them all. Never throws.
int gpu_device_count() noexcept;

// A backend on CUDA device `device` (0 <= device < gpu_device_count()) whose scratch, workspace
// and staging buffers are sized for batches of up to max_batch. Throws nn::Error on a
// bad max_batch or device, std::runtime_error when the build has no GPU backend or a CUDA/cuDNN/
// cuBLAS call fails (what() names the call, the status string and file:line).
std::unique_ptr<Backend> make_gpu_backend(int max_batch, int device = 0);

}  // namespace asyncps::nn
