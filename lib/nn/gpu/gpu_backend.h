// defines: asyncps::nn::make_gpu_backend, gpu_device_count, gpu_backend_built
// The GPU (cuDNN + cuBLAS) backend of the MNIST CNN, behind nn::Backend. This header is
// CUDA-free on purpose: apps and tests include it whether or not the build has CUDA. In a build
// without CUDA (ASYNCPS_CUDA_ENABLED off) the definitions come from gpu_stub.cpp.
#pragma once
#include <memory>
#include <string>

#include "nn/mnist_cnn.h"
#include "nn/error.h"

namespace asyncps::nn {

// True when this build compiled the CUDA backend (CUDA + cuDNN found at configure time).
bool gpu_backend_built() noexcept;

// Number of CUDA devices visible to this process; 0 when the build has no GPU backend, there is
// no driver, no device, or CUDA_VISIBLE_DEVICES hides them all. Never throws.
int gpu_device_count() noexcept;

// The kernels a GPU step runs. fused: the project's own (conv+bias+pool in one pass per layer,
// the backward passes through the pooling argmax, weight gradients as fixed-order chunked sums;
// 8 kernels a step, no library calls). cudnn: cuDNN convolutions and pooling, cuBLAS for the fc
// layer (about 20 kernels a step), kept to compare against.
enum class GpuKernels { fused, cudnn };

struct GpuOptions {
  GpuKernels kernels = GpuKernels::fused;
  // Each (batch size, batch source, host buffers) step is captured once as a CUDA graph and
  // replayed: one launch and one wait a step. false: every call enqueued one by one (to compare).
  bool graph = true;
  // The fused step's weight gradients of conv2 and fc run on a second stream beside conv2's
  // backward pass and conv1's weight gradient (in a graph: a branch), with bit-identical results.
  // false: every pass in order on one stream (to compare). The fused kernels only: make_gpu_backend
  // refuses false with GpuKernels::cudnn, where it would change nothing.
  bool fused_branches = true;
};

// A backend on CUDA device `device` (0 <= device < gpu_device_count()) whose scratch, workspace
// and staging buffers are sized for batches of up to max_batch. name(): "gpu" (fused kernels) or
// "gpu-cudnn". Throws nn::Error on a bad max_batch or device, when the build has no GPU backend,
// or when a CUDA/cuDNN/cuBLAS call fails (what() names the call, the status string and file:line).
std::unique_ptr<Backend> make_gpu_backend(int max_batch, int device = 0, GpuOptions options = {});

// "fused" / "cudnn"; parse_gpu_kernels throws nn::Error naming the choices (gpu_kernels_choices(),
// "fused or cudnn") on anything else. The one list of the names: a new GpuKernels is added here.
const char* gpu_kernels_name(GpuKernels k) noexcept;
const char* gpu_kernels_choices() noexcept;
GpuKernels parse_gpu_kernels(const std::string& name);

}  // namespace asyncps::nn
