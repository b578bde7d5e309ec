// Fully connected layer: y = x W + b, W is [in,out] (TF convention).
#pragma once

namespace asyncps::nn {

struct DenseDims {
  int B, IN, OUT;
};

// x is (B,IN), w is (IN,OUT), b is (OUT), y is (B,OUT).   y = x W + b
void dense_forward(const float* x, const float* w, const float* b, float* y, DenseDims d);

// dy is (B,OUT). Overwrites dw (IN,OUT) = x^T dy, db (OUT) = sum_b dy and, if non-null,
// dx (B,IN) = dy W^T.
void dense_backward(const float* x, const float* w, const float* dy, float* dw, float* db,
                    float* dx, DenseDims d);

}  // namespace asyncps::nn
