// Max pool 2x2, stride 2, SAME padding (TF): PH = ceil(H/2), PW = ceil(W/2); for odd sizes the
// last window is clipped (TF pads at the bottom/right only, with -inf).
#pragma once

#include <cstdint>

namespace asyncps::nn {

struct Pool2x2Dims {
  int B, H, W, C;  // input (B,H,W,C)
  int ph() const { return (H + 1) / 2; }
  int pw() const { return (W + 1) / 2; }
};

// x is (B,H,W,C), out is (B,PH,PW,C), idx is (B,PH,PW,C).
//   out[b,i,j,c] = max_{di,dj in {0,1}} x[b,2i+di,2j+dj,c]
//   idx[b,i,j,c] = flat index (h*W+w)*C+c inside sample b of the first max in scan order
void maxpool2x2_forward(const float* x, float* out, std::int32_t* idx, Pool2x2Dims d);

// dout, idx are (B,PH,PW,C); dx is (B,H,W,C), overwritten: dx[b, idx[b,i,j,c]] += dout[b,i,j,c],
// zero elsewhere (gradient goes to the argmax only).
void maxpool2x2_backward(const float* dout, const std::int32_t* idx, float* dx, Pool2x2Dims d);

}  // namespace asyncps::nn
