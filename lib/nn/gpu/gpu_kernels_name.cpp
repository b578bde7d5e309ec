// defines: gpu_kernels_name, gpu_kernels_choices, parse_gpu_kernels (built with or without CUDA)
#include <string>

#include "nn/error.h"
#include "nn/gpu/gpu_backend.h"

namespace asyncps::nn {

const char* gpu_kernels_name(GpuKernels k) noexcept { return k == GpuKernels::cudnn ? "cudnn" : "fused"; }

const char* gpu_kernels_choices() noexcept { return "fused or cudnn"; }

GpuKernels parse_gpu_kernels(const std::string& name) {
  if (name == "fused") return GpuKernels::fused;
  if (name == "cudnn") return GpuKernels::cudnn;
  throw Error("GPU kernels '" + name + "': choose " + gpu_kernels_choices());
}

}  // namespace asyncps::nn
