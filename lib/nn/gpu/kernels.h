// Small CUDA kernels of the GPU backend (kernels.cu). Each launcher enqueues on `stream` and returns
// cudaGetLastError(), so the caller wraps it in CUDA_CHECK and a failure names the launcher.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace asyncps::nn::gpu {

// out (cols,rows) = transpose of in (rows,cols), both row-major. HWIO [3,3,I,O] seen as
// (9*I, O) -> KRSC [O,3,3,I] seen as (O, 9*I), and back for the filter gradient.
cudaError_t launch_transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// y (rows,cols) += bias (cols) broadcast over rows (the fc bias on the logits).
cudaError_t launch_add_row_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream);

// Per sample of logits (B,10): loss[b] = logsumexp(z) - z[label], dlogits = (softmax(z) - onehot)/B.
cudaError_t launch_softmax_xent(const float* logits, const std::uint8_t* labels, int B, float* dlogits,
                                float* loss, cudaStream_t stream);

// *out = mean of v[0..n) in a fixed summation order (one block; deterministic).
cudaError_t launch_mean(const float* v, int n, float* out, cudaStream_t stream);

// Column sums of y (rows, C), C <= 16, written to out (C): the bias gradient of a conv layer on an
// NHWC tensor (rows = B*H*W) and of the fc layer (rows = B). Two deterministic passes: `blocks`
// partial sums of fixed row ranges into partial (blocks*C floats), then one block sums them.
// partial must hold partial_blocks(rows) * C floats.
int bias_grad_partial_blocks(long rows);
cudaError_t launch_bias_grad(const float* y, long rows, int C, float* partial, float* out,
                             cudaStream_t stream);

}  // namespace asyncps::nn::gpu
