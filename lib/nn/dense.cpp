// Fully connected layer on Eigen row-major maps. See dense.h.
#include "nn/dense.h"

// GCC 12 reports false -Wmaybe-uninitialized inside its own avx512 intrinsics when inlining
// Eigen's AVX-512 packet code (GCC bug 105593); the warning is middle-end, so it has to be
// silenced for the whole translation unit.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>

namespace asyncps::nn {
namespace {
using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const MatR>;
using Map = Eigen::Map<MatR>;
using CVec = Eigen::Map<const Eigen::RowVectorXf>;
using Vec = Eigen::Map<Eigen::RowVectorXf>;
}  // namespace

void dense_forward(const float* x, const float* w, const float* b, float* y, DenseDims d) {
  CMap X(x, d.B, d.IN);     // X is (B,IN)
  CMap Wm(w, d.IN, d.OUT);  // W is (IN,OUT)
  Map Y(y, d.B, d.OUT);     // Y is (B,OUT)
  Y.noalias() = X * Wm;                  // Y = X W
  Y.rowwise() += CVec(b, d.OUT);         // Y += b
}

void dense_backward(const float* x, const float* w, const float* dy, float* dw, float* db,
                    float* dx, DenseDims d) {
  CMap X(x, d.B, d.IN);       // X is (B,IN)
  CMap Wm(w, d.IN, d.OUT);    // W is (IN,OUT)
  CMap dY(dy, d.B, d.OUT);    // dY is (B,OUT)
  Map dW(dw, d.IN, d.OUT);    // dW is (IN,OUT)
  dW.noalias() = X.transpose() * dY;           // dW = X^T dY
  Vec(db, d.OUT) = dY.colwise().sum();         // db = sum_b dY
  if (dx) {
    Map dX(dx, d.B, d.IN);                     // dX is (B,IN)
    dX.noalias() = dY * Wm.transpose();        // dX = dY W^T
  }
}

}  // namespace asyncps::nn
