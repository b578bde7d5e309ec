// defines: SoftmaxRegression
#include "softmax_regression.h"

#include <algorithm>
#include <cmath>

namespace logreg {

SoftmaxRegression::SoftmaxRegression(asyncps::ParamLayout& layout, int features, int classes)
    : features_(features),
      classes_(classes),
      w_offset_(layout.add("w", {features, classes})),
      b_offset_(layout.add("b", {classes})) {}

void SoftmaxRegression::logits(std::span<const float> params, const float* x, std::span<float> out) const {
  const float* w = params.data() + w_offset_;  // (F, C)
  const float* b = params.data() + b_offset_;  // (C)
  std::copy(b, b + classes_, out.begin());
  for (int f = 0; f < features_; ++f) {        // out += x[f] * W[f, :]
    const float xf = x[f];
    const float* wf = w + static_cast<std::size_t>(f) * static_cast<std::size_t>(classes_);
    for (int c = 0; c < classes_; ++c) out[static_cast<std::size_t>(c)] += xf * wf[c];
  }
}

double SoftmaxRegression::softmax_xent(std::span<float> z, int label) const {
  const float m = *std::max_element(z.begin(), z.end());
  const float z_label = z[static_cast<std::size_t>(label)];
  double sum = 0;
  for (float& v : z) sum += (v = std::exp(v - m));
  for (float& v : z) v = static_cast<float>(v / sum);
  // -log p[label] = log(sum) - (z[label] - m): exact even where p[label] underflows
  return std::log(sum) - (static_cast<double>(z_label) - m);
}

double SoftmaxRegression::loss_and_grad(std::span<const float> params, const Dataset& data,
                                        std::span<const std::size_t> batch, std::span<float> grad) const {
  std::fill(grad.begin(), grad.end(), 0.0f);
  float* dw = grad.data() + w_offset_;
  float* db = grad.data() + b_offset_;
  std::vector<float> p(static_cast<std::size_t>(classes_));
  const float inv_b = 1.0f / static_cast<float>(batch.size());
  double loss = 0;
  for (const std::size_t i : batch) {
    const float* x = data.row(i);
    logits(params, x, p);
    loss += softmax_xent(p, data.y[i]);
    p[static_cast<std::size_t>(data.y[i])] -= 1.0f;  // d(loss_i)/d(logits) = p - onehot(y)
    for (int c = 0; c < classes_; ++c) db[c] += inv_b * p[static_cast<std::size_t>(c)];
    for (int f = 0; f < features_; ++f) {            // dW += x' (p - onehot) / B
      float* dwf = dw + static_cast<std::size_t>(f) * static_cast<std::size_t>(classes_);
      const float s = inv_b * x[f];
      for (int c = 0; c < classes_; ++c) dwf[c] += s * p[static_cast<std::size_t>(c)];
    }
  }
  return loss / static_cast<double>(batch.size());
}

Evaluation SoftmaxRegression::evaluate(std::span<const float> params, const Dataset& data) const {
  std::vector<float> p(static_cast<std::size_t>(classes_));
  double loss = 0;
  std::size_t right = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    logits(params, data.row(i), p);
    const auto best = std::max_element(p.begin(), p.end()) - p.begin();
    right += best == data.y[i];
    loss += softmax_xent(p, data.y[i]);
  }
  const double n = static_cast<double>(data.size());
  return {loss / n, static_cast<double>(right) / n};
}

}  // namespace logreg
