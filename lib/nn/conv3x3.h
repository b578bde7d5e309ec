// 3x3 convolution, stride 1, SAME padding (1 pixel of zeros on every side), NHWC, HWIO weights.
//   out[b,h,w,co] = bias[co] + sum_{kh,kw,ci} x[b,h+kh-1,w+kw-1,ci] * w[kh,kw,ci,co]
// Fast paths for the model's (CI,CO) = (1,8) and (8,16); any other shape uses a plain loop.
#pragma once

#include <cstdint>

namespace asyncps::nn {

struct Conv3x3Dims {
  int B, H, W, CI, CO;  // batch, height, width, input channels, output channels
};

// x is (B,H,W,CI), w is (3,3,CI,CO), bias is (CO), out is (B,H,W,CO).
void conv3x3_forward(const float* x, const float* w, const float* bias, float* out, Conv3x3Dims d);

// Dense backward. dout is (B,H,W,CO). Overwrites dw (3,3,CI,CO), db (CO) and, if non-null,
// dx (B,H,W,CI).
//   dw[kh,kw,ci,co] = sum_{b,h,w} x[b,h+kh-1,w+kw-1,ci] * dout[b,h,w,co]
//   db[co]          = sum_{b,h,w} dout[b,h,w,co]
//   dx[b,y,x,ci]    = sum_{kh,kw,co} dout[b,y-kh+1,x-kw+1,co] * w[kh,kw,ci,co]
void conv3x3_backward(const float* x, const float* w, const float* dout, float* dw, float* db,
                      float* dx, Conv3x3Dims d);

// Backward of conv3x3 followed by a max pool (maxpool2x2_forward), fused: the conv output
// gradient is nonzero only at the pool argmaxes, so only those positions are visited
// (4x less work than maxpool2x2_backward + conv3x3_backward, identical result up to rounding).
// pool_idx, dpool are (B,PH,PW,CO): pool_idx holds, per pooled value, the flat index
// (h*W+w)*CO+co of its argmax inside one sample's conv output (H,W,CO); dpool is dL/dpool.
// Overwrites dw, db and, if non-null, dx (B,H,W,CI).
void conv3x3_backward_pooled(const float* x, const float* w, const std::int32_t* pool_idx,
                             const float* dpool, int PH, int PW, float* dw, float* db, float* dx,
                             Conv3x3Dims d);

}  // namespace asyncps::nn
