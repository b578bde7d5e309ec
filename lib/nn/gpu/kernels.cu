// Small CUDA kernels of the GPU backend; see kernels.h. All are deterministic: no atomics, every
// sum in a fixed order, so a step gives bit-identical results run to run on one GPU.
#include "nn/gpu/kernels.h"

namespace asyncps::nn::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kClasses = 10;
constexpr int kMaxBiasChannels = 16;
constexpr long kRowsPerPartial = 4096;
constexpr int kMaxPartials = 1024;

int blocks_for(long n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int r = i / cols, c = i % cols;
  out[c * rows + r] = in[i];
}

__global__ void add_row_bias_kernel(float* __restrict__ y, const float* __restrict__ bias, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] += bias[i % cols];
}

__global__ void softmax_xent_kernel(const float* __restrict__ logits, const std::uint8_t* __restrict__ labels,
                                    int B, float* __restrict__ dlogits, float* __restrict__ loss) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  const float* z = logits + b * kClasses;
  float m = z[0];
  for (int c = 1; c < kClasses; ++c) m = fmaxf(m, z[c]);
  float e[kClasses], s = 0.0f;
  for (int c = 0; c < kClasses; ++c) {
    e[c] = expf(z[c] - m);
    s += e[c];
  }
  const int label = labels[b];
  loss[b] = logf(s) - (z[label] - m);
  const float inv_s = 1.0f / s, inv_b = 1.0f / static_cast<float>(B);
  for (int c = 0; c < kClasses; ++c)
    dlogits[b * kClasses + c] = (e[c] * inv_s - (c == label ? 1.0f : 0.0f)) * inv_b;
}

__global__ void mean_kernel(const float* __restrict__ v, int n, float* __restrict__ out) {
  __shared__ float sh[kThreads];
  float acc = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) acc += v[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = sh[0] / static_cast<float>(n);
}

// Block b sums rows [b*per, min((b+1)*per, rows)) of y (rows,C) per channel into partial[b*C + c].
__global__ void bias_grad_partial_kernel(const float* __restrict__ y, long rows, int C, long per,
                                         float* __restrict__ partial) {
  __shared__ float sh[kThreads][kMaxBiasChannels];
  float acc[kMaxBiasChannels];
#pragma unroll
  for (int c = 0; c < kMaxBiasChannels; ++c) acc[c] = 0.0f;
  const long begin = blockIdx.x * per;
  const long end = begin + per < rows ? begin + per : rows;
  for (long r = begin + threadIdx.x; r < end; r += kThreads) {
    const float* row = y + r * C;
#pragma unroll
    for (int c = 0; c < kMaxBiasChannels; ++c)
      if (c < C) acc[c] += row[c];
  }
#pragma unroll
  for (int c = 0; c < kMaxBiasChannels; ++c) sh[threadIdx.x][c] = acc[c];
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      for (int c = 0; c < C; ++c) sh[threadIdx.x][c] += sh[threadIdx.x + s][c];
    __syncthreads();
  }
  if (threadIdx.x < C) partial[blockIdx.x * C + threadIdx.x] = sh[0][threadIdx.x];
}

__global__ void bias_grad_final_kernel(const float* __restrict__ partial, int blocks, int C, float* __restrict__ out) {
  const int c = threadIdx.x;
  if (c >= C) return;
  float s = 0.0f;
  for (int b = 0; b < blocks; ++b) s += partial[b * C + c];
  out[c] = s;
}

}  // namespace

cudaError_t launch_transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  transpose_kernel<<<blocks_for(static_cast<long>(rows) * cols), kThreads, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

cudaError_t launch_add_row_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
  add_row_bias_kernel<<<blocks_for(static_cast<long>(rows) * cols), kThreads, 0, stream>>>(y, bias, rows, cols);
  return cudaGetLastError();
}

cudaError_t launch_softmax_xent(const float* logits, const std::uint8_t* labels, int B, float* dlogits,
                                float* loss, cudaStream_t stream) {
  softmax_xent_kernel<<<blocks_for(B), kThreads, 0, stream>>>(logits, labels, B, dlogits, loss);
  return cudaGetLastError();
}

cudaError_t launch_mean(const float* v, int n, float* out, cudaStream_t stream) {
  mean_kernel<<<1, kThreads, 0, stream>>>(v, n, out);
  return cudaGetLastError();
}

int bias_grad_partial_blocks(long rows) {
  long blocks = (rows + kRowsPerPartial - 1) / kRowsPerPartial;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxPartials) blocks = kMaxPartials;
  return static_cast<int>(blocks);
}

cudaError_t launch_bias_grad(const float* y, long rows, int C, float* partial, float* out, cudaStream_t stream) {
  if (C < 1 || C > kMaxBiasChannels) return cudaErrorInvalidValue;
  const int blocks = bias_grad_partial_blocks(rows);
  const long per = (rows + blocks - 1) / blocks;
  bias_grad_partial_kernel<<<blocks, kThreads, 0, stream>>>(y, rows, C, per, partial);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  bias_grad_final_kernel<<<1, 32, 0, stream>>>(partial, blocks, C, out);
  return cudaGetLastError();
}

}  // namespace asyncps::nn::gpu
