// Max pool 2x2 stride 2 SAME, NHWC, with argmax recording. See maxpool.h.
#include "nn/maxpool.h"

#include <algorithm>
#include <cstring>

#include "nn/simd.h"

namespace asyncps::nn {
namespace {

using simd::load8;
using simd::store8;
using simd::v8f;
typedef int v8i __attribute__((vector_size(32)));

// Even H and W (no clipped windows), C % 8 == 0: 8 channels per vector, branch-free max/argmax.
template <int C>
void forward_fast(const float* x, float* out, std::int32_t* idx, Pool2x2Dims d) {
  const int H = d.H, W = d.W, PH = H / 2, PW = W / 2;
  const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int b = 0; b < d.B; ++b) {
    const float* xb = x + static_cast<long>(b) * H * W * C;  // xb is (H,W,C)
    for (int i = 0; i < PH; ++i)
      for (int j = 0; j < PW; ++j) {
        const long po = ((static_cast<long>(b) * PH + i) * PW + j) * C;
#pragma GCC unroll 4
        for (int v = 0; v < C / 8; ++v) {
          const int e00 = ((2 * i) * W + 2 * j) * C + 8 * v;  // window corners, scan order
          const int es[3] = {e00 + C, e00 + W * C, e00 + W * C + C};
          v8f m = load8(xb + e00);  // m = x[2i,2j,:]
          v8i a = e00 + lane;       // a = its flat index
#pragma GCC unroll 3
          for (int k = 0; k < 3; ++k) {
            const v8f y = load8(xb + es[k]);
            const v8i gt = y > m;           // strict: the first max wins ties
            m = gt ? y : m;                 // m = max(m, y)
            a = gt ? es[k] + lane : a;      // a = argmax
          }
          store8(out + po + 8 * v, m);
          std::memcpy(idx + po + 8 * v, &a, sizeof a);
        }
      }
  }
}

}  // namespace

void maxpool2x2_forward(const float* x, float* out, std::int32_t* idx, Pool2x2Dims d) {
  if (d.H % 2 == 0 && d.W % 2 == 0) {
    if (d.C == 8) return forward_fast<8>(x, out, idx, d);
    if (d.C == 16) return forward_fast<16>(x, out, idx, d);
  }
  const auto [B, H, W, C] = d;
  const int PH = d.ph(), PW = d.pw();
  for (int b = 0; b < B; ++b) {
    const float* xb = x + static_cast<long>(b) * H * W * C;  // xb is (H,W,C)
    for (int i = 0; i < PH; ++i)
      for (int j = 0; j < PW; ++j) {
        const long po = ((static_cast<long>(b) * PH + i) * PW + j) * C;
        float* o = out + po;          // o is (C)
        std::int32_t* ix = idx + po;  // ix is (C)
        const int h0 = 2 * i, q0 = 2 * j;
        const int first = (h0 * W + q0) * C;
        for (int c = 0; c < C; ++c) {  // o = x[h0,q0,:]
          o[c] = xb[first + c];
          ix[c] = first + c;
        }
        for (int h = h0; h < std::min(h0 + 2, H); ++h)  // scan order; strict > keeps first max
          for (int q = q0; q < std::min(q0 + 2, W); ++q) {
            if (h == h0 && q == q0) continue;
            const int e = (h * W + q) * C;
            for (int c = 0; c < C; ++c) {
              const float v = xb[e + c];
              const bool gt = v > o[c];
              o[c] = gt ? v : o[c];       // o = max(o, x[h,q,:])
              ix[c] = gt ? e + c : ix[c];  // ix = argmax
            }
          }
      }
  }
}

void maxpool2x2_backward(const float* dout, const std::int32_t* idx, float* dx, Pool2x2Dims d) {
  const auto [B, H, W, C] = d;
  const long in_sz = static_cast<long>(H) * W * C, out_sz = static_cast<long>(d.ph()) * d.pw() * C;
  std::fill_n(dx, B * in_sz, 0.0f);
  for (int b = 0; b < B; ++b)
    for (long p = 0; p < out_sz; ++p)
      dx[b * in_sz + idx[b * out_sz + p]] += dout[b * out_sz + p];  // dx[argmax] += dout
}

}  // namespace asyncps::nn
