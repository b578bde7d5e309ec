// defines: asyncps::nn::fused (the fused GPU step's arithmetic, one output element per call)
// The MNIST CNN's training step as a few fused passes, each written as "compute output element i"
// so that the same code runs as a CUDA kernel (fused_kernels.cu: one thread per i) and on the host
// (tests/nn/test_fused_math.cpp checks it against the CPU backend in a build without a GPU).
// CUDA-free: under nvcc the functions are __host__ __device__, elsewhere plain inline C++.
//
// Shapes (B = batch, NHWC like the arena and the CPU backend):
//   data    X (N,784) of T (float, or uint8 read as byte/255), labels (N); the batch is rows[0..B)
//   conv1_pool_cell:  p1 (B,14,14,8), a1 (B,14,14,8) argmax 0..3 in the 2x2 window ((dy,dx) = (k/2,k%2)),
//                     and x (B,784): the batch gathered as floats
//   conv2_pool_cell:  p2 (B,7,7,16) = (B,784) in (h,w,c) order, a2 (B,7,7,16)
//   fc_lane:          logits (B,10) (a warp per logit)
//   xent:             loss (B), dlogits (B,10) = (softmax - onehot) / B
//   fc_back:          dp2 (B,784) = dlogits . Wf^T
//   conv2_back_pixel: dp1 (B,14,14,8) from dc2 (dp2 routed to pool2's argmax, per sample in
//                     shared memory only)
//   weight gradients, per chunk of the batch's samples (deterministic, no atomics): partial[chunk][o]
//     for the arena's contiguous ranges [conv1_w, conv1_b] (80), [conv2_w, conv2_b] (1168),
//     [fc_w, fc_b, loss] (7851: the last is the chunk's summed loss); then reduce_lane: a
//     fixed-order sum over the chunks into the gradient arena (and the mean loss after it).
// Pooling ties: the first maximum in scan order (0,0),(0,1),(1,0),(1,1) wins, as on the CPU.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define ASYNCPS_HD __host__ __device__ __forceinline__
#else
#define ASYNCPS_HD inline
#endif

namespace asyncps::nn::fused {

// Arena offsets (floats). This header stays free of the C++20 model header (nvcc compiles it as
// C++17); gpu_backend.cpp and the tests static_assert these against mnist_cnn_offset().
inline constexpr int kW1 = 0, kB1 = 72, kW2 = 80, kB2 = 1232, kWf = 1248, kBf = 9088, kParams = 9098;
inline constexpr int kC1 = 8, kC2 = 16, kFcIn = 784, kK = 10;
inline constexpr int kP1 = 14 * 14 * kC1, kP2 = 7 * 7 * kC2;  // pooled floats per sample
static_assert(kP2 == kFcIn);

// The weight-gradient groups: each a contiguous range of the arena (plus, for fc, one slot for
// the chunk's loss sum). Each partial sums one chunk of the batch's samples; the chunk length
// depends on B only (so a step is deterministic): ceil(B / kTarget*), so that a group has at most
// kTarget* chunks at any batch size: one sample a chunk (many blocks) at small batches, short
// serial sums in the final reduction at large ones.
inline constexpr int kConv1Outs = kW2 - kW1;           // conv1_w (72) + conv1_b (8)
inline constexpr int kConv2Outs = kWf - kW2;           // conv2_w (1152) + conv2_b (16)
inline constexpr int kFcOuts = kParams - kWf + 1;  // fc_w, fc_b, loss
inline constexpr int kTarget1 = 1024, kTarget2 = 512, kTargetFc = 16;
ASYNCPS_HD long ceil_div(long a, long b) { return (a + b - 1) / b; }
// A group's chunks of B samples: their length and number (the last may be shorter).
struct Chunking {
  long per;
  int n;
  ASYNCPS_HD Chunking(long terms, int target)
      : per(ceil_div(terms, target)), n(static_cast<int>(ceil_div(terms, ceil_div(terms, target)))) {}
  ASYNCPS_HD long begin(int ch) const { return ch * per; }
  ASYNCPS_HD long end(int ch, long terms) const { return (ch + 1) * per < terms ? (ch + 1) * per : terms; }
};

// The warp-wide sums (fc's logits, the final reduction): 32 lanes each sum a strided share, then
// a tree in a fixed order, lane l += lane l + off for off = 16, 8, 4, 2, 1 (what __shfl_down_sync
// does on the device; tree32 on the host). Deterministic: the order depends on nothing at run time.
inline constexpr int kLanes = 32;
inline float tree32(float* v) {
  for (int off = kLanes / 2; off > 0; off /= 2)
    for (int l = 0; l < off; ++l) v[l] += v[l + off];
  return v[0];
}

ASYNCPS_HD float pixel(float v) { return v; }
ASYNCPS_HD float pixel(std::uint8_t v) { return static_cast<float>(v) / 255.0f; }

// ---- forward ----------------------------------------------------------------------------------

// The convolutions run one sample per thread block, its input and the filters staged in shared
// memory: each "cell" function computes element q of one sample from those staged copies (the
// kernels call it per thread, the host test per element, staging the same way).

// The image of row rows[b] as floats (784): what a conv1 block stages (and writes to x (B,784),
// the batch gathered, for conv1's weight gradient).
template <class T>
ASYNCPS_HD float image_pixel(long b, int p, const T* __restrict__ X, const std::int32_t* __restrict__ rows) {
  return pixel(X[static_cast<long>(rows[b]) * 784 + p]);
}

// Pooled cell (py, px) of a 2x2/2 max pool over the conv output conv_at(y, x): its maximum and
// where it is (k = dy*2 + dx); the first maximum in scan order wins ties.
template <class ConvAt>
ASYNCPS_HD void max_pool_2x2(int py, int px, ConvAt conv_at, float& out, std::uint8_t& arg) {
  float best = 0.0f;
  int at = 0;
  for (int k = 0; k < 4; ++k) {
    const float v = conv_at(2 * py + k / 2, 2 * px + k % 2);
    if (k == 0 || v > best) {
      best = v;
      at = k;
    }
  }
  out = best;
  arg = static_cast<std::uint8_t>(at);
}

// q in [0, 14*14*8): one sample's p1[q], a1[q]. img: (28,28) floats; w: conv1_w HWIO [3][3][1][8];
// bias: conv1_b (8).
ASYNCPS_HD void conv1_pool_cell(int q, const float* __restrict__ img, const float* __restrict__ w,
                                const float* __restrict__ bias, float* __restrict__ p1, std::uint8_t* __restrict__ a1) {
  const int c = q % kC1, px = (q / kC1) % 14, py = q / (kC1 * 14);
  max_pool_2x2(py, px, [&](int y, int x) {
    float v = 0.0f;
    for (int ky = 0; ky < 3; ++ky) {
      const int yy = y + ky - 1;
      if (yy < 0 || yy >= 28) continue;
      for (int kx = 0; kx < 3; ++kx) {
        const int xx = x + kx - 1;
        if (xx < 0 || xx >= 28) continue;
        v += img[yy * 28 + xx] * w[(ky * 3 + kx) * kC1 + c];
      }
    }
    return v + bias[c];
  }, p1[q], a1[q]);
}

// q in [0, 7*7*16): one sample's p2[q], a2[q]. in: its p1 (14,14,8); w: conv2_w HWIO [3][3][8][16];
// bias: conv2_b (16).
ASYNCPS_HD void conv2_pool_cell(int q, const float* __restrict__ in, const float* __restrict__ w,
                                const float* __restrict__ bias, float* __restrict__ p2, std::uint8_t* __restrict__ a2) {
  const int co = q % kC2, px = (q / kC2) % 7, py = q / (kC2 * 7);
  max_pool_2x2(py, px, [&](int y, int x) {
    float v = 0.0f;
    for (int ky = 0; ky < 3; ++ky) {
      const int yy = y + ky - 1;
      if (yy < 0 || yy >= 14) continue;
      for (int kx = 0; kx < 3; ++kx) {
        const int xx = x + kx - 1;
        if (xx < 0 || xx >= 14) continue;
        const float* pin = in + (yy * 14 + xx) * kC1;
        const float* pw = w + (ky * 3 + kx) * kC1 * kC2 + co;
        for (int ci = 0; ci < kC1; ++ci) v += pin[ci] * pw[ci * kC2];
      }
    }
    return v + bias[co];
  }, p2[q], a2[q]);
}

// Lane `lane` of logit (b, j)'s warp: its share of p2[b,:] . fc_w[:,j] (f = lane, lane + 32, ...);
// logits[b,j] = fc_b[j] + the lanes' tree.
ASYNCPS_HD float fc_lane(long b, int j, int lane, const float* __restrict__ p2, const float* __restrict__ P) {
  const float* x = p2 + b * kFcIn;
  const float* w = P + kWf + j;  // [784][10]
  float acc = 0.0f;
  for (int f = lane; f < kFcIn; f += kLanes) acc += x[f] * w[f * kK];
  return acc;
}

// b in [0, B): loss[b] = logsumexp(z) - z[label], dlogits[b,:] = (softmax(z) - onehot(label)) / B.
ASYNCPS_HD void xent(long b, int B, const float* __restrict__ logits, const std::uint8_t* __restrict__ labels,
                     const std::int32_t* __restrict__ rows, float* __restrict__ loss, float* __restrict__ dlogits) {
  const float* z = logits + b * kK;
  float m = z[0];
  for (int c = 1; c < kK; ++c) m = z[c] > m ? z[c] : m;
  float e[kK], s = 0.0f;
  for (int c = 0; c < kK; ++c) {
    e[c] = expf(z[c] - m);
    s += e[c];
  }
  const int label = labels[rows[b]];
  loss[b] = logf(s) - (z[label] - m);
  const float inv_s = 1.0f / s, inv_b = 1.0f / static_cast<float>(B);
  for (int c = 0; c < kK; ++c) dlogits[b * kK + c] = (e[c] * inv_s - (c == label ? 1.0f : 0.0f)) * inv_b;
}

// ---- backward ---------------------------------------------------------------------------------

// i in [0, B*784): dp2[i] = dlogits[b,:] . fc_w[f,:].
ASYNCPS_HD void fc_back(long i, const float* __restrict__ dlogits, const float* __restrict__ P, float* __restrict__ dp2) {
  const int f = static_cast<int>(i % kFcIn);
  const long b = i / kFcIn;
  const float* d = dlogits + b * kK;
  const float* w = P + kWf + f * kK;
  float acc = 0.0f;
  for (int j = 0; j < kK; ++j) acc += d[j] * w[j];
  dp2[i] = acc;
}

// conv2's backward pass, one sample per block, staged in shared memory:
// dc2 (14,14,16) dense: dp2 routed to pool2's argmax, zero elsewhere. i in [0, 3136); d, a: the
// sample's dp2 and a2 (7,7,16).
ASYNCPS_HD float dc2_dense(int i, const float* __restrict__ d, const std::uint8_t* __restrict__ a) {
  const int co = i % kC2, xx = (i / kC2) % 14, yy = i / (kC2 * 14);
  const int cell = ((yy / 2) * 7 + xx / 2) * kC2 + co, k = (yy % 2) * 2 + xx % 2;
  return a[cell] == k ? d[cell] : 0.0f;
}
// conv2_w HWIO [3][3][8][16] as [3][3][16][8] (the 8 input channels of a tap and output channel
// contiguous): i in [0, 1152) of the transposed filter.
ASYNCPS_HD float w2_by_output(int i, const float* __restrict__ w) {
  const int ci = i % kC1, co = (i / kC1) % kC2, tap = i / (kC1 * kC2);
  return w[(tap * kC1 + ci) * kC2 + co];
}
// pix in [0, 196): one sample's dp1[y,x,0..8) = sum over (ky,kx,co) of dc2[y-ky+1, x-kx+1, co] *
// w2[ky,kx,ci,co]. wt: w2_by_output's layout.
ASYNCPS_HD void conv2_back_pixel(int pix, const float* __restrict__ dc2, const float* __restrict__ wt,
                                 float* __restrict__ dp1) {
  const int x = pix % 14, y = pix / 14;
  float acc[kC1];
  for (int ci = 0; ci < kC1; ++ci) acc[ci] = 0.0f;
  for (int ky = 0; ky < 3; ++ky) {
    const int yy = y - ky + 1;
    if (yy < 0 || yy >= 14) continue;
    for (int kx = 0; kx < 3; ++kx) {
      const int xx = x - kx + 1;
      if (xx < 0 || xx >= 14) continue;
      const float* g = dc2 + (yy * 14 + xx) * kC2;
      const float* w = wt + (ky * 3 + kx) * kC2 * kC1;
      for (int co = 0; co < kC2; ++co) {
        const float gc = g[co];
        for (int ci = 0; ci < kC1; ++ci) acc[ci] += gc * w[co * kC1 + ci];
      }
    }
  }
  for (int ci = 0; ci < kC1; ++ci) dp1[pix * kC1 + ci] = acc[ci];
}

// One sample's share of conv1's weight gradient, output o: o < 72: conv1_w[ky,kx,0,c], o >= 72:
// conv1_b[c]; through pool1's argmax (dc1 is dp1 at the argmax, zero elsewhere). img: its image
// (28,28) floats; d, a: its dp1 and a1 (14,14,8). A chunk's partial sums its samples in order.
ASYNCPS_HD float conv1_wgrad_sample(int o, const float* __restrict__ img, const float* __restrict__ d,
                                    const std::uint8_t* __restrict__ a) {
  float acc = 0.0f;
  if (o >= kB1 - kW1) {  // bias: every window routes its gradient to one position
    const int c = o - (kB1 - kW1);
    for (int q = 0; q < 196; ++q) acc += d[q * kC1 + c];
    return acc;
  }
  const int c = o % kC1, kk = o / kC1, ky = kk / 3, kx = kk % 3;
  for (int q = 0; q < 196; ++q) {
    const int k = a[q * kC1 + c];
    const int yy = 2 * (q / 14) + k / 2 + ky - 1, xx = 2 * (q % 14) + k % 2 + kx - 1;
    if (yy < 0 || yy >= 28 || xx < 0 || xx >= 28) continue;
    acc += img[yy * 28 + xx] * d[q * kC1 + c];
  }
  return acc;
}

// One sample's share of conv2's weight gradient, for thread t of a block of kConv2WgradThreads:
// t < 144: output channel co = t % 16 and tap (ky,kx) = t / 16, all 8 input channels at once
// (acc[ci] += ... for conv2_w[ky,kx,ci,co]); 144 <= t < 160: conv2_b[t - 144] in acc[0]. Through
// pool2's argmax. in: the sample's p1 (14,14,8); d, a: its dp2 and a2 (7,7,16).
inline constexpr int kConv2WgradThreads = 9 * kC2 + kC2;
ASYNCPS_HD void conv2_wgrad_sample(int t, const float* __restrict__ in, const float* __restrict__ d,
                                   const std::uint8_t* __restrict__ a, float* __restrict__ acc) {
  if (t >= 9 * kC2) {
    const int co = t - 9 * kC2;
    for (int q = 0; q < 49; ++q) acc[0] += d[q * kC2 + co];
    return;
  }
  const int co = t % kC2, tap = t / kC2, ky = tap / 3, kx = tap % 3;
  for (int q = 0; q < 49; ++q) {
    const int k = a[q * kC2 + co];
    const int yy = 2 * (q / 7) + k / 2 + ky - 1, xx = 2 * (q % 7) + k % 2 + kx - 1;
    if (yy < 0 || yy >= 14 || xx < 0 || xx >= 14) continue;
    const float g = d[q * kC2 + co];
    const float* pin = in + (yy * 14 + xx) * kC1;
    for (int ci = 0; ci < kC1; ++ci) acc[ci] += pin[ci] * g;
  }
}
// Where thread t's accumulator ci lands among conv2's outputs (HWIO order, then the biases);
// -1 where it holds nothing.
ASYNCPS_HD int conv2_wgrad_output(int t, int ci) {
  if (t >= 9 * kC2) return ci == 0 ? kB2 - kW2 + (t - 9 * kC2) : -1;
  return ((t / kC2) * kC1 + ci) * kC2 + t % kC2;
}

// Partial o of chunk ch of fc's terms (the samples): o < 7840: fc_w[f,j]; o < 7850: fc_b[j];
// o == 7850: the chunk's summed loss.
ASYNCPS_HD float fc_wgrad(int ch, int o, int B, const float* __restrict__ p2, const float* __restrict__ dlogits,
                          const float* __restrict__ loss) {
  const Chunking C(B, kTargetFc);
  const long b0 = C.begin(ch), b1 = C.end(ch, B);
  float acc = 0.0f;
  if (o == kFcOuts - 1) {
    for (long b = b0; b < b1; ++b) acc += loss[b];
  } else if (o >= kBf - kWf) {
    const int j = o - (kBf - kWf);
    for (long b = b0; b < b1; ++b) acc += dlogits[b * kK + j];
  } else {
    const int f = o / kK, j = o % kK;
    for (long b = b0; b < b1; ++b) acc += p2[b * kFcIn + f] * dlogits[b * kK + j];
  }
  return acc;
}

// The partials' layout in one buffer: conv1's chunks, then conv2's, then fc's.
struct PartialLayout {
  int n1, n2, nf;  // chunks of each group
  ASYNCPS_HD explicit PartialLayout(int B)
      : n1(Chunking(B, kTarget1).n), n2(Chunking(B, kTarget2).n), nf(Chunking(B, kTargetFc).n) {}
  ASYNCPS_HD long conv1_at() const { return 0; }
  ASYNCPS_HD long conv2_at() const { return static_cast<long>(n1) * kConv1Outs; }
  ASYNCPS_HD long fc_at() const { return conv2_at() + static_cast<long>(n2) * kConv2Outs; }
  ASYNCPS_HD long size() const { return fc_at() + static_cast<long>(nf) * kFcOuts; }
  ASYNCPS_HD long fc_threads() const { return static_cast<long>(nf) * kFcOuts; }  // one fc partial per thread
};
// The partials' buffer for every B <= max_batch (a group has at most min(B, target) chunks).
inline long partial_floats(int max_batch) {
  auto most = [max_batch](int target) { return static_cast<long>(max_batch < target ? max_batch : target); };
  return most(kTarget1) * kConv1Outs + most(kTarget2) * kConv2Outs + most(kTargetFc) * kFcOuts;
}

// t in [0, layout.fc_threads()): fc's partial t (chunk t / kFcOuts, output t % kFcOuts).
ASYNCPS_HD void fc_partial(long t, int B, const float* __restrict__ p2, const float* __restrict__ dlogits,
                           const float* __restrict__ loss, float* __restrict__ partial) {
  const PartialLayout L(B);
  partial[L.fc_at() + t] = fc_wgrad(static_cast<int>(t / kFcOuts), static_cast<int>(t % kFcOuts), B, p2, dlogits, loss);
}

// Lane `lane` of the gradient arena's element i (i == kParams: the loss): its share of the
// group's chunks (ch = lane, lane + 32, ...). grad_loss[i] = the lanes' tree (divided by B for
// the mean loss).
ASYNCPS_HD float reduce_lane(long i, int lane, int B, const float* __restrict__ partial) {
  const PartialLayout L(B);
  long base;
  int n, width, o;
  if (i < kW2) {
    base = L.conv1_at(), n = L.n1, width = kConv1Outs, o = static_cast<int>(i);
  } else if (i < kWf) {
    base = L.conv2_at(), n = L.n2, width = kConv2Outs, o = static_cast<int>(i - kW2);
  } else {
    base = L.fc_at(), n = L.nf, width = kFcOuts, o = static_cast<int>(i - kWf);
  }
  float acc = 0.0f;
  for (int ch = lane; ch < n; ch += kLanes) acc += partial[base + static_cast<long>(ch) * width + o];
  return acc;
}
ASYNCPS_HD float reduced_value(long i, int B, float tree) { return i == kParams ? tree / static_cast<float>(B) : tree; }

// i in [0, B*784): the batch gathered into a float (B,784) tensor, and its labels (i % 784 == 0).
template <class T>
ASYNCPS_HD void gather(long i, const T* __restrict__ X, const std::uint8_t* __restrict__ labels,
                       const std::int32_t* __restrict__ rows, float* __restrict__ x, std::uint8_t* __restrict__ y) {
  const long b = i / 784;
  const int p = static_cast<int>(i % 784);
  x[i] = pixel(X[static_cast<long>(rows[b]) * 784 + p]);
  if (p == 0) y[b] = labels[rows[b]];
}

}  // namespace asyncps::nn::fused
