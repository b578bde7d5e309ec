// 3x3 SAME convolution, NHWC / HWIO. See conv3x3.h for the math.
//
// Fast paths work on one sample at a time from a zero-padded copy of its input kept on the
// stack ((H+2,W+2,CI), borders zero), so the inner loops have no bounds checks:
//  - forward: register-blocked direct convolution, WB output pixels x CO channels of
//    accumulators, each weight row w[kh,kw,ci,:] loaded once per block and FMA'd with a
//    broadcast input value per pixel.
//  - backward after a max pool: only the argmax positions of the pool carry gradient.
#include "nn/conv3x3.h"

#include <algorithm>
#include <cstring>

#include "nn/simd.h"

namespace asyncps::nn {
namespace {

using simd::load8;
using simd::splat8;
using simd::store8;
using simd::v8f;
typedef int v8i __attribute__((vector_size(32)));

constexpr int kMaxPad = 4096;  // floats of padded input per sample the fast paths accept

// Copies sample x (H,W,C) into the interior of xpad (H+2,W+2,C) whose border is already zero.
// Calls f(t, xo) for each of the 9 taps t = kh*3+kw of output position (b, h, q) whose input
// (h+kh-1, q+kw-1) lies inside the H x W image; xo is that input's offset in x (B,H,W,C).
template <class F>
inline void for_each_tap(int b, int h, int q, int H, int W, int C, F&& f) {
  for (int kh = 0; kh < 3; ++kh) {
    const int ih = h + kh - 1;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < 3; ++kw) {
      const int iw = q + kw - 1;
      if (iw < 0 || iw >= W) continue;
      f(kh * 3 + kw, ((static_cast<long>(b) * H + ih) * W + iw) * C);
    }
  }
}

inline void pad_copy(const float* x, float* xpad, int H, int W, int C) {
  const int Wp = W + 2;
  for (int h = 0; h < H; ++h)
    std::memcpy(xpad + ((h + 1) * Wp + 1) * C, x + h * W * C, sizeof(float) * W * C);
}

// ---------------------------------------------------------------------------------------------
// forward

void forward_generic(const float* x, const float* w, const float* bias, float* out, Conv3x3Dims d) {
  const auto [B, H, W, CI, CO] = d;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int q = 0; q < W; ++q) {
        float* o = out + ((static_cast<long>(b) * H + h) * W + q) * CO;  // o is (CO)
        for (int co = 0; co < CO; ++co) o[co] = bias[co];                // o = bias
        for (int kh = 0; kh < 3; ++kh) {
          const int ih = h + kh - 1;
          if (ih < 0 || ih >= H) continue;  // SAME: zero padding contributes nothing
          for (int kw = 0; kw < 3; ++kw) {
            const int iw = q + kw - 1;
            if (iw < 0 || iw >= W) continue;
            const float* xp = x + ((static_cast<long>(b) * H + ih) * W + iw) * CI;  // (CI)
            const float* wp = w + (kh * 3 + kw) * CI * CO;                          // (CI,CO)
            for (int ci = 0; ci < CI; ++ci)
              for (int co = 0; co < CO; ++co) o[co] += xp[ci] * wp[ci * CO + co];  // o += x w
          }
        }
      }
}

// The CO channels of an output pixel are NV vectors of VW floats: 16 with AVX-512 (one zmm for
// CO = 16), else 8 (two ymm with AVX2; GCC lowers a 64-byte vector type through the stack
// without AVX-512: 8x slower. A build without AVX splits 8 floats into two SSE registers). W % WB == 0, (H+2)*(W+2)*CI <= kMaxPad.
#ifdef __AVX512F__
constexpr int kVecFloats = 16;
#else
constexpr int kVecFloats = 8;
#endif

template <int CI, int CO, int WB>
void forward_fast(const float* x, const float* w, const float* bias, float* out, Conv3x3Dims d) {
  constexpr int VW = CO < kVecFloats ? CO : kVecFloats;  // floats per vector
  constexpr int NV = CO / VW;                             // vectors per pixel
  static_assert(NV * VW == CO);
  typedef float vec __attribute__((vector_size(VW * sizeof(float))));  // (VW)
  auto load = [](const float* p) { vec v; std::memcpy(&v, p, sizeof v); return v; };
  const int H = d.H, W = d.W, Wp = W + 2;
  alignas(64) float xpad[kMaxPad];  // xpad is (H+2,W+2,CI), zero border
  std::fill_n(xpad, (H + 2) * Wp * CI, 0.0f);
  vec bv[NV];  // bias as (NV,VW)
  for (int v = 0; v < NV; ++v) bv[v] = load(bias + v * VW);
  for (int b = 0; b < d.B; ++b) {
    pad_copy(x + static_cast<long>(b) * H * W * CI, xpad, H, W, CI);
    float* ob = out + static_cast<long>(b) * H * W * CO;  // ob is (H,W,CO)
    for (int h = 0; h < H; ++h)
      for (int w0 = 0; w0 < W; w0 += WB) {
        vec acc[WB][NV];  // acc is (WB,CO): outputs (h, w0..w0+WB)
#pragma GCC unroll 16
        for (int j = 0; j < WB; ++j)
          for (int v = 0; v < NV; ++v) acc[j][v] = bv[v];  // acc = bias
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw) {
            const float* xr = xpad + ((h + kh) * Wp + w0 + kw) * CI;  // xr is (WB,CI), row-strided
            const float* wr = w + (kh * 3 + kw) * CI * CO;            // wr is (CI,CO)
            for (int ci = 0; ci < CI; ++ci) {
              vec wv[NV];  // w[kh,kw,ci,:]
              for (int v = 0; v < NV; ++v) wv[v] = load(wr + ci * CO + v * VW);
#pragma GCC unroll 16
              for (int j = 0; j < WB; ++j)
                for (int v = 0; v < NV; ++v) acc[j][v] += xr[j * CI + ci] * wv[v];  // acc[j] += x[j,ci] w[ci,:]
            }
          }
        float* o = ob + (h * W + w0) * CO;
#pragma GCC unroll 16
        for (int j = 0; j < WB; ++j)
          for (int v = 0; v < NV; ++v) std::memcpy(o + j * CO + v * VW, &acc[j][v], sizeof(vec));
      }
  }
}

// ---------------------------------------------------------------------------------------------
// dense backward (reference path: used for arbitrary dout, not by the model's step)

void backward_generic(const float* x, const float* w, const float* dout, float* dw, float* db,
                      float* dx, Conv3x3Dims d) {
  const auto [B, H, W, CI, CO] = d;
  std::fill_n(dw, 9 * CI * CO, 0.0f);
  std::fill_n(db, CO, 0.0f);
  if (dx) std::fill_n(dx, static_cast<long>(B) * H * W * CI, 0.0f);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int q = 0; q < W; ++q) {
        const float* g = dout + ((static_cast<long>(b) * H + h) * W + q) * CO;  // g is (CO)
        for (int co = 0; co < CO; ++co) db[co] += g[co];                        // db += g
        for_each_tap(b, h, q, H, W, CI, [&](int t, long xo) {
          const float* wp = w + t * CI * CO;  // wp is (CI,CO)
          float* dwp = dw + t * CI * CO;      // dwp is (CI,CO)
          for (int ci = 0; ci < CI; ++ci) {
            float s = 0.0f;
            for (int co = 0; co < CO; ++co) {
              dwp[ci * CO + co] += x[xo + ci] * g[co];  // dw[t,ci,co] += x[ci] g[co]
              s += wp[ci * CO + co] * g[co];            // dx[ci] += sum_co w[t,ci,co] g[co]
            }
            if (dx) dx[xo + ci] += s;
          }
        });
      }
}

// ---------------------------------------------------------------------------------------------
// backward after a max pool (sparse dout)

void backward_pooled_generic(const float* x, const float* w, const std::int32_t* pool_idx,
                             const float* dpool, int PH, int PW, float* dw, float* db, float* dx,
                             Conv3x3Dims d) {
  const auto [B, H, W, CI, CO] = d;
  std::fill_n(dw, 9 * CI * CO, 0.0f);
  std::fill_n(db, CO, 0.0f);
  if (dx) std::fill_n(dx, static_cast<long>(B) * H * W * CI, 0.0f);
  const long P = static_cast<long>(PH) * PW * CO;  // pooled values per sample
  for (int b = 0; b < B; ++b)
    for (long p = 0; p < P; ++p) {
      const float g = dpool[b * P + p];     // g = dL/dout[b,h,w,co] at the argmax
      const int a = pool_idx[b * P + p];    // a = (h*W+w)*CO+co
      const int co = a % CO, s = a / CO, h = s / W, q = s % W;
      db[co] += g;
      for_each_tap(b, h, q, H, W, CI, [&](int t, long xo) {
        for (int ci = 0; ci < CI; ++ci) {
          dw[(t * CI + ci) * CO + co] += x[xo + ci] * g;          // dw[t,ci,co] += x g
          if (dx) dx[xo + ci] += w[(t * CI + ci) * CO + co] * g;  // dx[ci] += w[t,ci,co] g
        }
      });
    }
}

// CI % 8 == 0: visits each (pooled position, co) once; per output channel the 9 taps of
// dw[:,:,:,co] and w[:,:,:,co] stay in registers.
template <int CI, int CO, bool WithDx>
void backward_pooled_fast(const float* x, const float* w, const std::int32_t* pool_idx,
                          const float* dpool, int PH, int PW, float* dw, float* db, float* dx,
                          Conv3x3Dims d) {
  constexpr int NC = CI / 8;
  const int H = d.H, W = d.W, Wp = W + 2, HW = H * W;
  const int NP = PH * PW;
  alignas(64) float wt[CO * 9 * CI];   // wt is (CO,9,CI): w transposed
  alignas(64) float dwt[CO * 9 * CI];  // dwt is (CO,9,CI): dw transposed, accumulated
  alignas(64) float xpad[kMaxPad];     // xpad is (H+2,W+2,CI)
  alignas(64) float dxpad[kMaxPad];    // dxpad is (H+2,W+2,CI)
  std::int32_t off[kMaxPad];           // off[s] = padded offset of the window of output s
  for (int t = 0; t < 9; ++t)
    for (int ci = 0; ci < CI; ++ci)
      for (int co = 0; co < CO; ++co) wt[(co * 9 + t) * CI + ci] = w[(t * CI + ci) * CO + co];
  std::fill_n(dwt, CO * 9 * CI, 0.0f);
  std::fill_n(xpad, (H + 2) * Wp * CI, 0.0f);
  for (int s = 0; s < HW; ++s) off[s] = ((s / W) * Wp + s % W) * CI;
  float dbs[CO] = {};
  for (int b = 0; b < d.B; ++b) {
    pad_copy(x + static_cast<long>(b) * HW * CI, xpad, H, W, CI);
    if constexpr (WithDx) std::fill_n(dxpad, (H + 2) * Wp * CI, 0.0f);
    const std::int32_t* ib = pool_idx + static_cast<long>(b) * NP * CO;  // ib is (PH,PW,CO)
    const float* gb = dpool + static_cast<long>(b) * NP * CO;            // gb is (PH,PW,CO)
    for (int co = 0; co < CO; ++co) {
      v8f acc[9][NC], wv[9][NC];  // dw[:,:,:,co] and w[:,:,:,co], (9,CI)
#pragma GCC unroll 9
      for (int t = 0; t < 9; ++t)
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) {
          acc[t][c] = load8(dwt + (co * 9 + t) * CI + 8 * c);
          wv[t][c] = load8(wt + (co * 9 + t) * CI + 8 * c);
        }
      float gsum = 0.0f;
      for (int p = 0; p < NP; ++p) {
        const float g = gb[p * CO + co];                  // g = dL/dconv_out at the argmax
        const int o = off[ib[p * CO + co] / CO];          // window of that output, padded coords
        const v8f gv = splat8(g);
        gsum += g;                                        // db[co] += g
#pragma GCC unroll 3
        for (int kh = 0; kh < 3; ++kh)
#pragma GCC unroll 3
          for (int kw = 0; kw < 3; ++kw)
#pragma GCC unroll 4
            for (int c = 0; c < NC; ++c) {
              const int t = kh * 3 + kw, e = o + (kh * Wp + kw) * CI + 8 * c;
              acc[t][c] += gv * load8(xpad + e);  // dw[t,:,co] += g * x[window t, :]
              if constexpr (WithDx)
                store8(dxpad + e, load8(dxpad + e) + gv * wv[t][c]);  // dx[window t,:] += g w[t,:,co]
            }
      }
      dbs[co] += gsum;
#pragma GCC unroll 9
      for (int t = 0; t < 9; ++t)
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) store8(dwt + (co * 9 + t) * CI + 8 * c, acc[t][c]);
    }
    if constexpr (WithDx) {  // dx[b] = interior of dxpad
      float* dxb = dx + static_cast<long>(b) * HW * CI;
      for (int h = 0; h < H; ++h)
        std::memcpy(dxb + h * W * CI, dxpad + ((h + 1) * Wp + 1) * CI, sizeof(float) * W * CI);
    }
  }
  for (int t = 0; t < 9; ++t)
    for (int ci = 0; ci < CI; ++ci)
      for (int co = 0; co < CO; ++co) dw[(t * CI + ci) * CO + co] = dwt[(co * 9 + t) * CI + ci];
  for (int co = 0; co < CO; ++co) db[co] = dbs[co];
}

// CI == 1, CO % 8 == 0, even H and W, no dx (the model's first layer): vectorised over co.
// For each pool window and each of its 4 positions, dmask = dpool where that position is the
// argmax (else 0) and dw[t,0,:] += x[position + tap t] * dmask: the dense conv backward with
// the pool's scatter folded in.
template <int CO>
void backward_pooled_c1(const float* x, const std::int32_t* pool_idx, const float* dpool,
                        float* dw, float* db, Conv3x3Dims d) {
  constexpr int NV = CO / 8;
  const int H = d.H, W = d.W, Wp = W + 2, PH = H / 2, PW = W / 2;
  alignas(64) float xpad[kMaxPad];  // xpad is (H+2,W+2)
  std::fill_n(xpad, (H + 2) * Wp, 0.0f);
  v8f acc[9][NV] = {}, dbv[NV] = {};  // acc is dw (9,CO), dbv is db (CO)
  const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int b = 0; b < d.B; ++b) {
    pad_copy(x + static_cast<long>(b) * H * W, xpad, H, W, 1);
    const std::int32_t* ib = pool_idx + static_cast<long>(b) * PH * PW * CO;  // (PH,PW,CO)
    const float* gb = dpool + static_cast<long>(b) * PH * PW * CO;            // (PH,PW,CO)
    for (int i = 0; i < PH; ++i)
      for (int j = 0; j < PW; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          v8i iv;
          std::memcpy(&iv, ib + (i * PW + j) * CO + 8 * v, sizeof iv);  // argmax of co block v
          const v8f g = load8(gb + (i * PW + j) * CO + 8 * v);
          dbv[v] += g;  // db += g
#pragma GCC unroll 2
          for (int di = 0; di < 2; ++di)
#pragma GCC unroll 2
            for (int dj = 0; dj < 2; ++dj) {
              const int h = 2 * i + di, q = 2 * j + dj;
              const v8i mask = iv == ((h * W + q) * CO + 8 * v + lane);  // -1 where argmax
              const v8f dm = (v8f)((v8i)g & mask);  // dm = g where (h,q) is the argmax, else 0
              const float* xp = xpad + h * Wp + q;  // window of output (h,q), padded coords
#pragma GCC unroll 3
              for (int kh = 0; kh < 3; ++kh)
#pragma GCC unroll 3
                for (int kw = 0; kw < 3; ++kw)
                  acc[kh * 3 + kw][v] += splat8(xp[kh * Wp + kw]) * dm;  // dw[t,:] += x dm
            }
        }
  }
  for (int t = 0; t < 9; ++t)
    for (int v = 0; v < NV; ++v) store8(dw + t * CO + 8 * v, acc[t][v]);
  for (int v = 0; v < NV; ++v) store8(db + 8 * v, dbv[v]);
}

bool pad_fits(const Conv3x3Dims& d) { return (d.H + 2) * (d.W + 2) * d.CI <= kMaxPad; }

// Output pixels per block for CO = 16: the accumulators must stay in registers (AVX-512: 14 of 32
// zmm; AVX2: 7 pixels x 2 ymm = 14 of 16).
#ifdef __AVX512F__
constexpr int kBlock16 = 14;
#else
constexpr int kBlock16 = 7;
#endif

}  // namespace

void conv3x3_forward(const float* x, const float* w, const float* bias, float* out, Conv3x3Dims d) {
  if (pad_fits(d)) {
    if (d.CI == 1 && d.CO == 8 && d.W % 14 == 0) return forward_fast<1, 8, 14>(x, w, bias, out, d);
    if (d.CI == 8 && d.CO == 16 && d.W % kBlock16 == 0) return forward_fast<8, 16, kBlock16>(x, w, bias, out, d);
  }
  forward_generic(x, w, bias, out, d);
}

void conv3x3_backward(const float* x, const float* w, const float* dout, float* dw, float* db,
                      float* dx, Conv3x3Dims d) {
  backward_generic(x, w, dout, dw, db, dx, d);
}

void conv3x3_backward_pooled(const float* x, const float* w, const std::int32_t* pool_idx,
                             const float* dpool, int PH, int PW, float* dw, float* db, float* dx,
                             Conv3x3Dims d) {
  if (pad_fits(d) && d.H * d.W <= kMaxPad) {
    if (d.CI == 8 && d.CO == 16) {
      if (dx) return backward_pooled_fast<8, 16, true>(x, w, pool_idx, dpool, PH, PW, dw, db, dx, d);
      return backward_pooled_fast<8, 16, false>(x, w, pool_idx, dpool, PH, PW, dw, db, dx, d);
    }
    if (d.CI == 1 && d.CO == 8 && !dx && d.H % 2 == 0 && d.W % 2 == 0 && PH == d.H / 2 &&
        PW == d.W / 2)
      return backward_pooled_c1<8>(x, pool_idx, dpool, dw, db, d);
  }
  backward_pooled_generic(x, w, pool_idx, dpool, PH, PW, dw, db, dx, d);
}

}  // namespace asyncps::nn
