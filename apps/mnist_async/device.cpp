// defines: make_backend, local_rank_from_env
#include "device.h"

#include <cstdlib>
#include <string>

#include "asyncps/error.h"
#include "nn/gpu/gpu_backend.h"

namespace mnist_async {

int local_rank_from_env(int fallback) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (end && *end == '\0' && r >= 0 && r < (1L << 30)) return static_cast<int>(r);
  }
  return fallback;
}

std::unique_ptr<asyncps::nn::Backend> make_backend(const std::string& device, int max_batch, int local_rank) {
  namespace nn = asyncps::nn;
  if (device == "gpu" || device == "auto") {
    const bool built = nn::gpu_backend_built();
    const int count = built ? nn::gpu_device_count() : 0;
    if (count > 0) {
      const int rank = local_rank_from_env(local_rank);
      return nn::make_gpu_backend(max_batch, (rank < 0 ? 0 : rank) % count);
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
  }
  return nn::make_cpu_backend(max_batch);
}

}  // namespace mnist_async
