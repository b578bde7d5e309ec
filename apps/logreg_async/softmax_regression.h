// defines: logreg::SoftmaxRegression, logreg::Evaluation
// Multinomial logistic regression on the flat arena of libasyncps:
//   logits = x W + b           x is (B, F), W is (F, C), b is (C)
//   p      = softmax(logits)
//   loss   = mean_i -log p[i, y_i]
//   dL/dW  = x' (p - onehot(y)) / B,   dL/db = mean_i (p - onehot(y))[i]
// The parameters live in an arena laid out by the ParamLayout the model registered its
// tensors in ("w" then "b"); the gradient has the same layout.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "asyncps/param_layout.h"
#include "blobs.h"

namespace logreg {

struct Evaluation {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // fraction classified right
};

class SoftmaxRegression {
 public:
  // Registers "w" (features, classes) and "b" (classes) in `layout`.
  SoftmaxRegression(asyncps::ParamLayout& layout, int features, int classes);

  // Mean loss over the rows `batch` of `data`; writes dL/dparams into `grad` (arena-sized).
  double loss_and_grad(std::span<const float> params, const Dataset& data, std::span<const std::size_t> batch,
                       std::span<float> grad) const;
  // Loss and accuracy over the whole of `data`.
  Evaluation evaluate(std::span<const float> params, const Dataset& data) const;

 private:
  // logits -> probabilities in place (max-subtracted); returns -log p[label].
  double softmax_xent(std::span<float> logits, int label) const;
  void logits(std::span<const float> params, const float* x, std::span<float> out) const;

  int features_, classes_;
  std::size_t w_offset_, b_offset_;
};

}  // namespace logreg
