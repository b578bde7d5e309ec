// Softmax cross-entropy with integer labels, mean over the batch, numerically stable.
#pragma once

#include <cstdint>

namespace asyncps::nn {

// logits is (B,C), labels (B) in [0,C), probs (B,C) receives softmax(logits) (may alias logits).
// Returns mean_b [ logsumexp(logits[b]) - logits[b,labels[b]] ].
float softmax_xent_forward(const float* logits, const std::uint8_t* labels, float* probs, int B,
                           int C);

// probs from softmax_xent_forward; dlogits (B,C) = (probs - onehot(labels)) / B.
void softmax_xent_backward(const float* probs, const std::uint8_t* labels, float* dlogits, int B,
                           int C);

}  // namespace asyncps::nn
