// defines: asyncps::nn::gpu::launch_fused_* (the fused step's kernels, fused_kernels.cu)
// The fused step is a fixed list of passes, one kernel each (fused_math.h gives each pass's
// arithmetic); the launchers enqueue them on `stream` and return cudaGetLastError(), so the caller
// wraps them in CUDA_CHECK. Pixel type T: float or std::uint8_t (read as byte/255).
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

// The fused step's device scratch (each sized for max_batch; shapes in fused_math.h). x: the batch
// gathered as floats (B,784), written by the first pass.
struct FusedScratch {
  float *x, *p1, *p2, *logits, *loss, *dlogits, *dp2, *dp1, *partial;
  std::uint8_t *a1, *a2;
};

// The step's passes in order: [0, kFusedConvPasses) the two conv+bias+pool layers; then one pass
// for the logits, the loss, dlogits and dp2 together (fc, softmax cross-entropy, fc backward); the
// rest the gradient arena and the mean loss (grad_loss: kMnistCnnParams + 1 floats).
inline constexpr int kFusedConvPasses = 2, kFusedPasses = 8;
const char* fused_pass_name(int pass) noexcept;
template <class T>
cudaError_t launch_fused_pass(int pass, int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                              float* grad_loss, cudaStream_t stream);

// The logits alone (B,10) in s.logits: passes [0, kFusedConvPasses), then the fc layer (no labels
// are read: src.labels may be null).
template <class T>
cudaError_t launch_fused_forward(int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                                 cudaStream_t stream);
// A second stream and two events (made with cudaEventDisableTiming) for the step's branch.
struct FusedBranch {
  cudaStream_t side;
  cudaEvent_t fork, join;
};

// Every pass of the step: the gradient arena and the mean loss in grad_loss (kParams + 1 floats),
// then copied to host_grad_loss (page-locked, as many floats) unless it is null. What each pass
// reads makes a graph, 0 -> 1 -> 2 -> {3 -> 5, 4, 6} -> 7: conv2's weight gradient (4) and fc's
// (6) need only what the head (2) wrote. Without `branch` every pass runs in order on `stream`,
// then one download. With it, passes 4 and 6 run on branch->side, forked after pass 2, beside 3
// and 5 on `stream`; the reduction (7) is split so that each stream reduces and downloads the
// elements its passes completed (the side stream all but conv1's 80), and the side stream is
// joined back into `stream` at the end (inside a capture the fork and join become the graph's
// edges). Each pass and each half of the reduction writes its own elements with the same
// arithmetic, so both ways give bit-identical results. After an error, the side stream has
// still been joined back wherever it was forked.
template <class T>
cudaError_t launch_fused_step(int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                              float* grad_loss, float* host_grad_loss, cudaStream_t stream,
                              const FusedBranch* branch = nullptr);

// x (B,784) float and y (B) gathered from src (the cuDNN path's input on a resident dataset).
template <class T>
cudaError_t launch_gather(int B, BatchSource<T> src, float* x, std::uint8_t* y, cudaStream_t stream);

// out[i] = i for i in [0, n).
cudaError_t launch_iota(std::int32_t* out, int n, cudaStream_t stream);

}  // namespace asyncps::nn::gpu
