// defines: exponential_decay, MovingAverage
#include "schedule.h"

#include <algorithm>
#include <cmath>

#include "asyncps/error.h"

namespace mnist_async {

double exponential_decay(double base, double rate, std::int64_t step, double decay_steps) {
  // lr = base * rate^(step / decay_steps)
  return base * std::pow(rate, static_cast<double>(step) / decay_steps);
}

MovingAverage::MovingAverage(std::span<const float> initial, double decay)
    : shadow_(initial.begin(), initial.end()), decay_(decay) {}

double MovingAverage::decay_at(double decay, std::int64_t n) {
  // d = min(decay, (1 + n) / (10 + n))
  return std::min(decay, (1.0 + static_cast<double>(n)) / (10.0 + static_cast<double>(n)));
}

double MovingAverage::decay_over(double decay, std::int64_t from, std::int64_t to) {
  // D = prod_{j = from+1}^{to} min(decay, (1 + j) / (10 + j))
  double keep = 1.0;
  std::int64_t j = from + 1;
  // the warm-up term only matters while (1 + j) / (10 + j) < decay; past it every factor is decay
  for (; j <= to && decay_at(decay, j) < decay; ++j) keep *= decay_at(decay, j);
  if (j <= to) keep *= std::pow(decay, static_cast<double>(to - j + 1));
  return keep;
}

void MovingAverage::apply(std::span<const float> values, std::int64_t global_step) {
  if (values.size() != shadow_.size()) throw asyncps::Error("MovingAverage::apply: size differs from the shadow");
  const std::int64_t from = applied_ && global_step > last_ ? last_ : global_step - 1;
  applied_ = true;
  last_ = global_step;
  const float one_minus_d = static_cast<float>(1.0 - decay_over(decay_, from, global_step));
  // shadow -= (1 - D) * (shadow - value)
  for (std::size_t i = 0; i < shadow_.size(); ++i) shadow_[i] -= one_minus_d * (shadow_[i] - values[i]);
}

}  // namespace mnist_async
