// Where the fused GPU step's time goes: each pass of the fused step (lib/nn/gpu/fused_kernels.h)
// timed on its own with CUDA events, at one batch size, on random MNIST-like bytes read through a
// row list (the resident dataset's path). Built only with CUDA; exits 77 without a device.
// Usage: bench_gpu_kernels [batch=128] [reps=200]
// Prints one line per pass and one machine-readable line:
//   PASSES batch=<B> <pass>=<us> ... total_us=<us>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "nn/gpu/fused_kernels.h"
#include "nn/gpu/fused_math.h"
#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;
namespace g = asyncps::nn::gpu;

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    if (const cudaError_t e_ = (call); e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "bench_gpu_kernels: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

template <class T>
T* device_copy(const std::vector<T>& v) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, v.size() * sizeof(T) + 1));
  CHECK_CUDA(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}
template <class T>
T* device_zeros(long n) {
  return device_copy(std::vector<T>(static_cast<std::size_t>(n)));
}

int main(int argc, char** argv) {
  const int B = argc > 1 ? std::atoi(argv[1]) : 128;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("no GPU: bench_gpu_kernels not run");
    return 77;
  }
  if (B <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: bench_gpu_kernels [batch=128] [reps=200]\n");
    return 2;
  }
  constexpr int kRows = 60000;
  std::mt19937 rng(3);
  std::vector<std::uint8_t> X(static_cast<std::size_t>(kRows) * 784), labels(kRows);
  for (auto& v : X) v = rng() % 4 == 0 ? static_cast<std::uint8_t>(rng() % 256) : 0;
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % 10);
  std::vector<std::int32_t> rows(static_cast<std::size_t>(B));
  for (auto& r : rows) r = static_cast<std::int32_t>(rng() % kRows);
  std::vector<float> params(nn::kMnistCnnParams);
  nn::glorot_uniform_init(params, 1);

  const g::BatchSource<std::uint8_t> src{device_copy(X), device_copy(labels), device_copy(rows)};
  const float* P = device_copy(params);
  namespace f = asyncps::nn::fused;
  const long nb = B;
  const g::FusedScratch s{device_zeros<float>(nb * 784),          device_zeros<float>(nb * f::kP1),
                          device_zeros<float>(nb * f::kP2),       device_zeros<float>(nb * 10),
                          device_zeros<float>(nb),                device_zeros<float>(nb * 10),
                          device_zeros<float>(nb * f::kP2),       device_zeros<float>(nb * f::kP1),
                          device_zeros<float>(f::partial_floats(B)), device_zeros<std::uint8_t>(nb * f::kP1),
                          device_zeros<std::uint8_t>(nb * f::kP2)};
  float* grad_loss = device_zeros<float>(f::kParams + 1);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  std::vector<cudaEvent_t> ev(g::kFusedPasses + 1);
  for (auto& e : ev) CHECK_CUDA(cudaEventCreate(&e));
  std::vector<double> us(g::kFusedPasses, 0.0);
  for (int rep = -10; rep < reps; ++rep) {  // 10 warm-up steps
    for (int pass = 0; pass < g::kFusedPasses; ++pass) {
      CHECK_CUDA(cudaEventRecord(ev[static_cast<std::size_t>(pass)], stream));
      CHECK_CUDA(g::launch_fused_pass(pass, B, src, P, s, grad_loss, stream));
    }
    CHECK_CUDA(cudaEventRecord(ev.back(), stream));
    CHECK_CUDA(cudaEventSynchronize(ev.back()));
    if (rep < 0) continue;
    for (int pass = 0; pass < g::kFusedPasses; ++pass) {
      float ms = 0.0f;
      CHECK_CUDA(cudaEventElapsedTime(&ms, ev[static_cast<std::size_t>(pass)], ev[static_cast<std::size_t>(pass) + 1]));
      us[static_cast<std::size_t>(pass)] += 1e3 * ms / reps;
    }
  }
  double total = 0.0;
  std::printf("PASSES batch=%d", B);
  for (int pass = 0; pass < g::kFusedPasses; ++pass) {
    total += us[static_cast<std::size_t>(pass)];
    std::printf(" %d:%s=%.1f", pass, g::fused_pass_name(pass), us[static_cast<std::size_t>(pass)]);
  }
  std::printf(" total_us=%.1f\n", total);
  return 0;
}
