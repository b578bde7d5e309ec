// defines: Momentum
#include "momentum.h"

#include <string>

#include "asyncps/error.h"

namespace mnist_async {

Momentum::Momentum(std::size_t n, double mu) : v_(n, 0.0f), next_(n, 0.0f), mu_(static_cast<float>(mu)) {}

std::span<const float> Momentum::propose(std::span<const float> grad) {
  if (grad.size() != v_.size())
    throw asyncps::Error("Momentum: gradient has " + std::to_string(grad.size()) + " floats, the velocity " +
                         std::to_string(v_.size()));
  for (std::size_t i = 0; i < v_.size(); ++i) next_[i] = mu_ * v_[i] + grad[i];  // v' = mu v + g
  return next_;
}

void Momentum::commit() { v_.swap(next_); }

}  // namespace mnist_async
