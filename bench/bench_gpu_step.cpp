// Times one training step of the GPU backend at one batch size, as a libasyncps worker runs it:
// parameters uploaded from host memory, the gradient and loss downloaded, then the host SGD update
// of the 9098 parameters. Each configuration of the backend side by side, in one run:
//   asyncps-fused-resident-own  fused kernels, one CUDA graph a step, the batch named by rows of a
//                            dataset resident on the GPU (bytes), the parameters and gradient in the
//                            backend's own page-locked buffers (step_params, step_grad: no host
//                            copy; what mnist_async --device gpu runs)
//   asyncps-fused-resident-own-polling  the same, the host polling the device between calls of a
//                            while-computing function that does nothing (mnist_async's runs the
//                            transport there) instead of waiting in cudaEventSynchronize
//   asyncps-fused-resident-own-serial  the same, every pass in order on one stream (no branch:
//                            GpuOptions::fused_branches false)
//   asyncps-fused-resident   the caller's own vectors (copied through pinned staging)
//   asyncps-fused            fused kernels, graph, the batch's images uploaded from the host
//   asyncps-fused-eager      fused kernels enqueued call by call, images uploaded
//   asyncps-cudnn-resident   cuDNN + cuBLAS, graph, resident dataset
//   asyncps-cudnn            cuDNN + cuBLAS, graph, images uploaded
//   asyncps-cudnn-eager      cuDNN + cuBLAS call by call, images uploaded (the backend before graphs)
// and forward alone (fused). With each step's device time (CUDA events around it) beside the wall
// time: their difference is the host's share (staging copies, launch, synchronisation, SGD).
// Usage: bench_gpu_step [batch=128] [seconds=1] [device=0]
// Prints a human line per measurement and one machine-readable line per configuration:
//   RESULT impl=<impl> batch=<B> ms_per_step=<ms> samples_per_s=<n> device_ms=<ms>
// Exits 77 with one line when there is no GPU (or the build has none).
#include <algorithm>
#include <cstdio>
#include <span>
#include <cstdlib>
#include <exception>
#include <random>
#include <vector>

#include "bench_batch.h"
#include "nn/gpu/gpu_backend.h"
#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;

namespace {

struct Config {
  const char* impl;
  nn::GpuOptions options;
  bool resident;
  bool own_buffers;  // the parameters and gradient in step_params() / step_grad()
  bool polling = false;  // a while-computing function set: the host polls the device
};

}  // namespace

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  if (batch <= 0 || seconds <= 0.0) {
    std::fprintf(stderr, "usage: bench_gpu_step [batch=128] [seconds=1] [device=0]\n");
    return 2;
  }
  if (nn::gpu_device_count() == 0) {
    std::puts(nn::gpu_backend_built() ? "no GPU: bench_gpu_step not run"
                                      : "no GPU: bench_gpu_step not run (this build has no GPU backend)");
    return 77;
  }
  try {
    bench::RandomBatch in(batch);
    auto& [params, grad, x, labels, logits] = in;
    // an MNIST-sized dataset of MNIST-like bytes (byte/255 floats: kept as bytes on the device)
    constexpr int kRows = 60000;
    std::vector<float> images(static_cast<std::size_t>(kRows) * nn::kImagePixels);
    std::vector<std::uint8_t> image_labels(kRows);
    std::mt19937 rng(7);
    for (float& v : images) v = rng() % 4 == 0 ? static_cast<float>(rng() % 256) / 255.0f : 0.0f;
    for (auto& l : image_labels) l = static_cast<std::uint8_t>(rng() % nn::kClasses);
    std::vector<std::int32_t> rows(static_cast<std::size_t>(batch));

    const Config configs[] = {
        {"asyncps-fused-resident-own", {nn::GpuKernels::fused, true}, true, true},
        {"asyncps-fused-resident-own-polling", {nn::GpuKernels::fused, true}, true, true, true},
        {"asyncps-fused-resident-own-serial", {nn::GpuKernels::fused, true, false}, true, true},
        {"asyncps-fused-resident", {nn::GpuKernels::fused, true}, true, false},
        {"asyncps-fused", {nn::GpuKernels::fused, true}, false, false},
        {"asyncps-fused-eager", {nn::GpuKernels::fused, false}, false, false},
        {"asyncps-cudnn-resident", {nn::GpuKernels::cudnn, true}, true, false},
        {"asyncps-cudnn", {nn::GpuKernels::cudnn, true}, false, false},
        {"asyncps-cudnn-eager", {nn::GpuKernels::cudnn, false}, false, false},
    };
    volatile float sink = 0.0f;
    bool failed = false;
    for (const Config& c : configs) try {
      auto backend = nn::make_gpu_backend(batch, device, c.options);
      if (c.resident) backend->set_dataset(images, image_labels);
      if (c.polling) backend->set_while_computing([] {});
      const std::span<float> P = c.own_buffers ? backend->step_params() : std::span<float>(params);
      const std::span<float> G = c.own_buffers ? backend->step_grad() : std::span<float>(grad);
      if (c.own_buffers) std::copy(params.begin(), params.end(), P.begin());
      double device_s = 0.0;
      long steps = 0;
      std::uint64_t state = 12345;  // the worker draws its rows on the host each step
      const double ms = bench::time_it(c.impl, batch, seconds, 50, [&] {
        float loss;
        if (c.resident) {
          for (auto& r : rows) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            r = static_cast<std::int32_t>((state >> 33) % kRows);
          }
          loss = backend->loss_and_grad_rows(P, rows, G);
        } else {
          loss = backend->loss_and_grad(P, x, labels, G);
        }
        sink = sink + loss;
        for (std::size_t i = 0; i < P.size(); ++i) P[i] -= 1e-4f * G[i];
        device_s += backend->last_step_device_seconds();
        ++steps;
      });
      const double device_ms = 1e3 * device_s / static_cast<double>(steps);  // warm-up included
      std::printf("RESULT impl=%s batch=%d ms_per_step=%.4f samples_per_s=%.0f device_ms=%.4f\n", c.impl, batch, ms,
                  1e3 * batch / ms, device_ms);
      std::fflush(stdout);
    } catch (const std::exception& e) {  // one configuration failing does not hide the others
      std::printf("FAILED impl=%s batch=%d: %s\n", c.impl, batch, e.what());
      std::fflush(stdout);
      failed = true;
    }
    auto fwd = nn::make_gpu_backend(batch, device);
    bench::time_it("forward (fused)", batch, seconds, 50, [&] {
      fwd->forward(params, x, logits);
      sink = sink + logits[0];
    });
    if (failed) return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
