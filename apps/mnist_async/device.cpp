// defines: make_backend
#include "device.h"

#include <string>

#include "asyncps/error.h"
#include "nn/gpu/gpu_backend.h"

namespace mnist_async {

std::unique_ptr<asyncps::nn::Backend> make_backend(const Config& config, int max_batch, int node_worker_index) {
  namespace nn = asyncps::nn;
  const std::string& device = config.device;
  if (device == "gpu" || device == "auto") {
    const bool built = nn::gpu_backend_built();
    const int count = built ? nn::gpu_device_count() : 0;
    if (count > 0) {
      const nn::GpuOptions options{nn::parse_gpu_kernels(config.gpu_kernels), !config.gpu_eager};
      return nn::make_gpu_backend(max_batch, (node_worker_index < 0 ? 0 : node_worker_index) % count, options);
    }
    if (device == "gpu") {
      if (!built)
        throw asyncps::ConfigError(
            "--device gpu: this build has no GPU backend (CUDA and cuDNN were not found when it was configured); "
            "use --device cpu");
      throw asyncps::ConfigError(
          "--device gpu: no CUDA device is visible on this host (no GPU, no driver, or CUDA_VISIBLE_DEVICES hides "
          "them); use --device cpu or --device auto");
    }
    // auto found no GPU on this worker's host: a GPU flag given would change nothing here
    if (!config.gpu_flag_given.empty())
      throw asyncps::ConfigError(config.gpu_flag_given + " has no effect: --device auto found no GPU here (" +
                                 (built ? "no CUDA device is visible" : "this build has no GPU backend") +
                                 ") and computes on the CPU");
  }
  return nn::make_cpu_backend(max_batch);
}

}  // namespace mnist_async
