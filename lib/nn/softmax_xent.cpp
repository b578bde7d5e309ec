// Softmax cross-entropy, stable via log-sum-exp. See softmax_xent.h.
#include "nn/softmax_xent.h"

#include <algorithm>
#include <cmath>

namespace asyncps::nn {

float softmax_xent_forward(const float* logits, const std::uint8_t* labels, float* probs, int B,
                           int C) {
  double total = 0.0;
  for (int b = 0; b < B; ++b) {
    const float* z = logits + static_cast<long>(b) * C;  // z is (C)
    float* p = probs + static_cast<long>(b) * C;         // p is (C)
    const float m = *std::max_element(z, z + C);         // m = max_c z
    const float zy = z[labels[b]];                       // read before p (may alias z) is written
    float s = 0.0f;
    for (int c = 0; c < C; ++c) {
      p[c] = std::exp(z[c] - m);  // p = exp(z - m)   (<= 1: no overflow)
      s += p[c];                  // s = sum exp(z - m) >= 1
    }
    const float inv = 1.0f / s;
    for (int c = 0; c < C; ++c) p[c] *= inv;  // p = softmax(z)
    total += static_cast<double>(m) + std::log(static_cast<double>(s)) -
             static_cast<double>(zy);  // loss_b = logsumexp(z) - z[y]
  }
  return static_cast<float>(total / B);  // mean over the batch
}

void softmax_xent_backward(const float* probs, const std::uint8_t* labels, float* dlogits, int B,
                           int C) {
  const float inv_b = 1.0f / static_cast<float>(B);
  for (int b = 0; b < B; ++b) {
    const float* p = probs + static_cast<long>(b) * C;  // p is (C)
    float* g = dlogits + static_cast<long>(b) * C;      // g is (C)
    for (int c = 0; c < C; ++c) g[c] = p[c] * inv_b;    // g = p / B
    g[labels[b]] -= inv_b;                              // g -= onehot(y) / B
  }
}

}  // namespace asyncps::nn
