// The GPU backend of a build without CUDA: nothing is visible, nothing can be made.
#include <stdexcept>

#include "nn/gpu/gpu_backend.h"
#include "nn/error.h"

namespace asyncps::nn {

bool gpu_backend_built() noexcept { return false; }

int gpu_device_count() noexcept { return 0; }

std::unique_ptr<Backend> make_gpu_backend(int /*max_batch*/, int /*device*/, GpuOptions /*options*/) {
  throw Error(
      "make_gpu_backend: this build has no GPU backend (CUDA and cuDNN were not found when it was "
      "configured)");
}

}  // namespace asyncps::nn
