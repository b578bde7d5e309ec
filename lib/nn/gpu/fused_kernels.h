// defines: asyncps::nn::gpu::launch_fused_* (the fused step's kernels, fused_kernels.cu)
// One launcher per pass of fused_math.h; each enqueues one kernel (one thread per output element)
// on `stream` and returns cudaGetLastError(), so the caller wraps it in CUDA_CHECK. Pixel type T:
// float or std::uint8_t (read as byte/255). Shapes: see fused_math.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace asyncps::nn::gpu {

// Where a step's batch comes from: X (N,784) of T, labels (N), rows[0..B) of it.
template <class T>
struct BatchSource {
  const T* X;
  const std::uint8_t* labels;
  const std::int32_t* rows;
};

// The fused step's device scratch (each sized for max_batch; see fused_math.h).
struct FusedScratch {
  float *p1, *p2, *logits, *loss, *dlogits, *dp2, *dp1, *partial;
  std::uint8_t *a1, *a2;
};

// Forward to logits: conv1+bias+pool, conv2+bias+pool, fc.
template <class T>
cudaError_t launch_fused_forward(int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                                 cudaStream_t stream);

// The whole training step after the forward pass: softmax cross-entropy, the backward passes, the
// chunked weight-gradient partials and their reduction into grad_loss (kMnistCnnParams gradient
// floats, then the mean loss).
template <class T>
cudaError_t launch_fused_backward(int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                                  float* grad_loss, cudaStream_t stream);

// x (B,784) float and y (B) gathered from src (the cuDNN path's input on a resident dataset).
template <class T>
cudaError_t launch_gather(int B, BatchSource<T> src, float* x, std::uint8_t* y, cudaStream_t stream);

// out[i] = i for i in [0, n).
cudaError_t launch_iota(std::int32_t* out, int n, cudaStream_t stream);

}  // namespace asyncps::nn::gpu
