// defines: make_backend
#include "device.h"

#include "asyncps/error.h"

namespace mnist_async {

std::unique_ptr<asyncps::nn::Backend> make_backend(const std::string& device, int max_batch, int /*local_rank*/) {
  if (device == "gpu")
    throw asyncps::ConfigError(
        "--device gpu: this build has no GPU backend (CUDA and cuDNN were not found when it was configured); use "
        "--device cpu");
  return asyncps::nn::make_cpu_backend(max_batch);
}

}  // namespace mnist_async
