// The fused step's kernels: each runs fused_math.h's per-element function (one thread, or one
// warp, per output element; the convolutions one sample per block from shared memory).
// Deterministic: no atomics; every sum runs in a fixed order (chunked partials, then a fixed-order
// warp tree), so a step gives bit-identical results run to run.
#include "nn/gpu/fused_kernels.h"
#include "nn/gpu/fused_math.h"

namespace asyncps::nn::gpu {
namespace {

namespace f = ::asyncps::nn::fused;
constexpr int kThreads = 128;
constexpr int kSampleThreads = 256;  // the one-sample-per-block kernels
constexpr unsigned kFullMask = 0xffffffffu;

int blocks_for(long n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// The lanes' tree of fused_math.h's tree32: lane 0 ends with it.
__device__ float warp_tree(float v) {
  for (int off = f::kLanes / 2; off > 0; off /= 2) v += __shfl_down_sync(kFullMask, v, off);
  return v;
}

// One sample per block: the image staged as floats (and written to x), conv1's filter and bias.
template <class T>
__global__ void conv1_pool_kernel(BatchSource<T> src, const float* __restrict__ P, float* __restrict__ x,
                                  float* __restrict__ p1, std::uint8_t* __restrict__ a1) {
  __shared__ float img[784], w[f::kW2 - f::kW1];
  const long b = blockIdx.x;
  for (int p = threadIdx.x; p < 784; p += blockDim.x) {
    const float v = f::image_pixel(b, p, src.X, src.rows);
    img[p] = v;
    x[b * 784 + p] = v;
  }
  for (int i = threadIdx.x; i < f::kW2 - f::kW1; i += blockDim.x) w[i] = P[f::kW1 + i];
  __syncthreads();
  for (int q = threadIdx.x; q < f::kP1; q += blockDim.x)
    f::conv1_pool_cell(q, img, w, w + (f::kB1 - f::kW1), p1 + b * f::kP1, a1 + b * f::kP1);
}

// One sample per block: its p1 and conv2's filter and bias staged in shared memory.
__global__ void conv2_pool_kernel(const float* __restrict__ p1, const float* __restrict__ P, float* __restrict__ p2,
                                  std::uint8_t* __restrict__ a2) {
  __shared__ float in[f::kP1], w[f::kWf - f::kW2];
  const long b = blockIdx.x;
  for (int i = threadIdx.x; i < f::kP1; i += blockDim.x) in[i] = p1[b * f::kP1 + i];
  for (int i = threadIdx.x; i < f::kWf - f::kW2; i += blockDim.x) w[i] = P[f::kW2 + i];
  __syncthreads();
  for (int q = threadIdx.x; q < f::kP2; q += blockDim.x)
    f::conv2_pool_cell(q, in, w, w + (f::kB2 - f::kW2), p2 + b * f::kP2, a2 + b * f::kP2);
}

// One sample per block of 10 warps, warp j: logit j.
__global__ void fc_kernel(const float* __restrict__ p2, const float* __restrict__ P, float* __restrict__ logits) {
  const long b = blockIdx.x;
  const int j = threadIdx.x / f::kLanes, lane = threadIdx.x % f::kLanes;
  const float v = warp_tree(f::fc_lane(b, j, lane, p2, P));
  if (lane == 0) logits[b * f::kK + j] = v + P[f::kBf + j];
}

// The step's head, one sample per block of 10 warps: its logits as fc_kernel computes them, then
// (thread 0) its loss and dlogits (10), then dp2 (784) = dlogits . Wf^T, a thread per element.
// What three kernels did (fc, softmax cross-entropy, fc backward), with the same arithmetic; the
// block's own global writes are visible to it after __syncthreads.
template <class T>
__global__ void fc_xent_back_kernel(int B, BatchSource<T> src, const float* __restrict__ p2,
                                    const float* __restrict__ P, float* __restrict__ logits, float* __restrict__ loss,
                                    float* __restrict__ dlogits, float* __restrict__ dp2) {
  const long b = blockIdx.x;
  const int j = threadIdx.x / f::kLanes, lane = threadIdx.x % f::kLanes;
  const float v = warp_tree(f::fc_lane(b, j, lane, p2, P));
  if (lane == 0) logits[b * f::kK + j] = v + P[f::kBf + j];
  __syncthreads();
  if (threadIdx.x == 0) f::xent(b, B, logits, src.labels, src.rows, loss, dlogits);
  __syncthreads();
  for (int k = threadIdx.x; k < f::kFcIn; k += blockDim.x) f::fc_back(b * f::kFcIn + k, dlogits, P, dp2);
}

// One sample per block: its dp2 routed to pool2's argmax as a dense dc2 (14,14,16), and conv2's
// filter by output channel, staged in shared memory; a thread per pixel, its 8 channels at once.
__global__ void conv2_back_kernel(const float* __restrict__ dp2, const std::uint8_t* __restrict__ a2,
                                  const float* __restrict__ P, float* __restrict__ dp1) {
  __shared__ float d[f::kP2], dc2[14 * 14 * f::kC2], wt[f::kB2 - f::kW2];
  __shared__ std::uint8_t a[f::kP2];
  const long b = blockIdx.x;
  for (int i = threadIdx.x; i < f::kP2; i += blockDim.x) {
    d[i] = dp2[b * f::kP2 + i];
    a[i] = a2[b * f::kP2 + i];
  }
  for (int i = threadIdx.x; i < f::kB2 - f::kW2; i += blockDim.x) wt[i] = f::w2_by_output(i, P + f::kW2);
  __syncthreads();
  for (int i = threadIdx.x; i < 14 * 14 * f::kC2; i += blockDim.x) dc2[i] = f::dc2_dense(i, d, a);
  __syncthreads();
  for (int pix = threadIdx.x; pix < 196; pix += blockDim.x) f::conv2_back_pixel(pix, dc2, wt, dp1 + b * f::kP1);
}

// One chunk of samples per block: conv2's weight-gradient partials, each sample's p1, dp2 and a2
// staged in shared memory in turn; a thread per (tap, output channel), 8 input channels at once.
__global__ void conv2_wgrad_kernel(int B, const float* __restrict__ p1, const float* __restrict__ dp2,
                                   const std::uint8_t* __restrict__ a2, float* __restrict__ partial) {
  __shared__ float in[f::kP1], d[f::kP2];
  __shared__ std::uint8_t a[f::kP2];
  const f::Chunking C(B, f::kTarget2);
  const int ch = blockIdx.x, t = threadIdx.x;
  float acc[f::kC1];
#pragma unroll
  for (int ci = 0; ci < f::kC1; ++ci) acc[ci] = 0.0f;
  for (long b = C.begin(ch); b < C.end(ch, B); ++b) {
    for (int i = t; i < f::kP1; i += blockDim.x) in[i] = p1[b * f::kP1 + i];
    for (int i = t; i < f::kP2; i += blockDim.x) {
      d[i] = dp2[b * f::kP2 + i];
      a[i] = a2[b * f::kP2 + i];
    }
    __syncthreads();
    f::conv2_wgrad_sample(t, in, d, a, acc);
    __syncthreads();
  }
#pragma unroll
  for (int ci = 0; ci < f::kC1; ++ci)
    if (const int o = f::conv2_wgrad_output(t, ci); o >= 0) partial[static_cast<long>(ch) * f::kConv2Outs + o] = acc[ci];
}

// One chunk of samples per block: conv1's weight-gradient partials (80), each sample's image, dp1
// and a1 staged in shared memory in turn.
constexpr int kConv1Threads = 96;
__global__ void conv1_wgrad_kernel(int B, const float* __restrict__ x, const float* __restrict__ dp1,
                                   const std::uint8_t* __restrict__ a1, float* __restrict__ partial) {
  __shared__ float img[784], d[f::kP1];
  __shared__ std::uint8_t a[f::kP1];
  const f::Chunking C(B, f::kTarget1);
  const int ch = blockIdx.x, o = threadIdx.x;
  float acc = 0.0f;
  for (long b = C.begin(ch); b < C.end(ch, B); ++b) {
    for (int i = threadIdx.x; i < 784; i += blockDim.x) img[i] = x[b * 784 + i];
    for (int i = threadIdx.x; i < f::kP1; i += blockDim.x) {
      d[i] = dp1[b * f::kP1 + i];
      a[i] = a1[b * f::kP1 + i];
    }
    __syncthreads();
    if (o < f::kConv1Outs) acc += f::conv1_wgrad_sample(o, img, d, a);
    __syncthreads();
  }
  if (o < f::kConv1Outs) partial[static_cast<long>(ch) * f::kConv1Outs + o] = acc;
}

__global__ void fc_wgrad_kernel(long n, int B, const float* __restrict__ p2, const float* __restrict__ dlogits,
                                const float* __restrict__ loss, float* __restrict__ partial) {
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < n) f::fc_partial(t, B, p2, dlogits, loss, partial);
}

// One warp per element [begin, end) of the gradient arena (element kParams: the loss).
__global__ void reduce_kernel(long begin, long end, int B, const float* __restrict__ partial,
                              float* __restrict__ grad_loss) {
  const long i = begin + (static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x) / f::kLanes;
  const int lane = threadIdx.x % f::kLanes;
  if (i >= end) return;  // (whole warps: the range is counted in warps)
  const float v = warp_tree(f::reduce_lane(i, lane, B, partial));
  if (lane == 0) grad_loss[i] = f::reduced_value(i, B, v);
}

template <class T>
__global__ void gather_kernel(long n, BatchSource<T> src, float* __restrict__ x, std::uint8_t* __restrict__ y) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f::gather(i, src.X, src.labels, src.rows, x, y);
}

__global__ void iota_kernel(std::int32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i;
}

constexpr const char* kPassNames[kFusedPasses] = {
    "conv1+bias+pool", "conv2+bias+pool", "fc+xent+fc backward", "conv2 backward", "conv2 wgrad",
    "conv1 wgrad",     "fc wgrad",        "reduce"};

cudaError_t launch_reduce(long begin, long end, int B, const float* partial, float* grad_loss, cudaStream_t stream) {
  reduce_kernel<<<blocks_for((end - begin) * f::kLanes), kThreads, 0, stream>>>(begin, end, B, partial, grad_loss);
  return cudaGetLastError();
}

// grad_loss[begin, end) -> host[begin, end)
cudaError_t download(long begin, long end, const float* grad_loss, float* host, cudaStream_t stream) {
  return cudaMemcpyAsync(host + begin, grad_loss + begin, static_cast<std::size_t>(end - begin) * sizeof(float),
                         cudaMemcpyDeviceToHost, stream);
}

}  // namespace

const char* fused_pass_name(int pass) noexcept { return pass >= 0 && pass < kFusedPasses ? kPassNames[pass] : "?"; }

template <class T>
cudaError_t launch_fused_pass(int pass, int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                              float* grad_loss, cudaStream_t stream) {
  switch (pass) {
    case 0:
      conv1_pool_kernel<T><<<B, kSampleThreads, 0, stream>>>(src, params, s.x, s.p1, s.a1);
      break;
    case 1:
      conv2_pool_kernel<<<B, kSampleThreads, 0, stream>>>(s.p1, params, s.p2, s.a2);
      break;
    case 2:
      fc_xent_back_kernel<T><<<B, f::kK * f::kLanes, 0, stream>>>(B, src, s.p2, params, s.logits, s.loss, s.dlogits,
                                                                 s.dp2);
      break;
    case 3:
      conv2_back_kernel<<<B, kSampleThreads, 0, stream>>>(s.dp2, s.a2, params, s.dp1);
      break;
    case 4: {
      const f::PartialLayout L(B);
      conv2_wgrad_kernel<<<L.n2, f::kConv2WgradThreads, 0, stream>>>(B, s.p1, s.dp2, s.a2, s.partial + L.conv2_at());
      break;
    }
    case 5: {
      const f::PartialLayout L(B);
      conv1_wgrad_kernel<<<L.n1, kConv1Threads, 0, stream>>>(B, s.x, s.dp1, s.a1, s.partial + L.conv1_at());
      break;
    }
    case 6: {
      const long n = f::PartialLayout(B).fc_threads();
      fc_wgrad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(n, B, s.p2, s.dlogits, s.loss, s.partial);
      break;
    }
    case 7:
      return launch_reduce(0, static_cast<long>(f::kParams) + 1, B, s.partial, grad_loss, stream);
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_fused_forward(int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                                 cudaStream_t stream) {
  for (int pass = 0; pass < kFusedConvPasses; ++pass)
    if (const cudaError_t e = launch_fused_pass(pass, B, src, params, s, nullptr, stream); e != cudaSuccess) return e;
  fc_kernel<<<B, f::kK * f::kLanes, 0, stream>>>(s.p2, params, s.logits);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_fused_step(int B, BatchSource<T> src, const float* params, const FusedScratch& s,
                              float* grad_loss, float* host_grad_loss, cudaStream_t stream,
                              const FusedBranch* branch) {
  auto run = [&](int pass, cudaStream_t on) { return launch_fused_pass(pass, B, src, params, s, grad_loss, on); };
  constexpr long kEnd = static_cast<long>(f::kParams) + 1;
  if (branch == nullptr) {
    for (int pass = 0; pass < kFusedPasses; ++pass)
      if (const cudaError_t e = run(pass, stream); e != cudaSuccess) return e;
    return host_grad_loss ? download(0, kEnd, grad_loss, host_grad_loss, stream) : cudaSuccess;
  }
  for (int pass = 0; pass <= 2; ++pass)
    if (const cudaError_t e = run(pass, stream); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaEventRecord(branch->fork, stream); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaStreamWaitEvent(branch->side, branch->fork, 0); e != cudaSuccess) return e;
  // Forked: from here the side stream is joined back whatever fails. The reduction is split at
  // conv1's group (arena [0, kW2)): the side stream reduces and downloads conv2's and fc's
  // elements and the loss as soon as their partials are written, the main stream conv1's 80.
  const long split = f::kW2;
  auto then = [](cudaError_t e, auto&& next) { return e == cudaSuccess ? next() : e; };
  cudaError_t side = run(4, branch->side);
  side = then(side, [&] { return run(6, branch->side); });
  side = then(side, [&] { return launch_reduce(split, kEnd, B, s.partial, grad_loss, branch->side); });
  if (host_grad_loss) side = then(side, [&] { return download(split, kEnd, grad_loss, host_grad_loss, branch->side); });
  cudaError_t main = run(3, stream);
  main = then(main, [&] { return run(5, stream); });
  main = then(main, [&] { return launch_reduce(0, split, B, s.partial, grad_loss, stream); });
  if (host_grad_loss) main = then(main, [&] { return download(0, split, grad_loss, host_grad_loss, stream); });
  cudaError_t join = cudaEventRecord(branch->join, branch->side);
  join = then(join, [&] { return cudaStreamWaitEvent(stream, branch->join, 0); });
  for (const cudaError_t e : {side, main, join})
    if (e != cudaSuccess) return e;
  return cudaSuccess;
}

template <class T>
cudaError_t launch_gather(int B, BatchSource<T> src, float* x, std::uint8_t* y, cudaStream_t stream) {
  const long n = static_cast<long>(B) * 784;
  gather_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(n, src, x, y);
  return cudaGetLastError();
}

cudaError_t launch_iota(std::int32_t* out, int n, cudaStream_t stream) {
  iota_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n);
  return cudaGetLastError();
}

#define ASYNCPS_FUSED_INSTANTIATE(T)                                                                           \
  template cudaError_t launch_fused_pass<T>(int, int, BatchSource<T>, const float*, const FusedScratch&, float*, \
                                            cudaStream_t);                                                     \
  template cudaError_t launch_fused_forward<T>(int, BatchSource<T>, const float*, const FusedScratch&,           \
                                               cudaStream_t);                                                  \
  template cudaError_t launch_fused_step<T>(int, BatchSource<T>, const float*, const FusedScratch&, float*,      \
                                            float*, cudaStream_t, const FusedBranch*);                         \
  template cudaError_t launch_gather<T>(int, BatchSource<T>, float*, std::uint8_t*, cudaStream_t);
ASYNCPS_FUSED_INSTANTIATE(float)
ASYNCPS_FUSED_INSTANTIATE(std::uint8_t)
#undef ASYNCPS_FUSED_INSTANTIATE

}  // namespace asyncps::nn::gpu
