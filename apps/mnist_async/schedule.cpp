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

void MovingAverage::apply(std::span<const float> values, std::int64_t num_updates) {
  if (values.size() != shadow_.size()) throw asyncps::Error("MovingAverage::apply: size differs from the shadow");
  const float one_minus_d = static_cast<float>(1.0 - decay_at(decay_, num_updates));
  // shadow -= (1 - d) * (shadow - value)
  for (std::size_t i = 0; i < shadow_.size(); ++i) shadow_[i] -= one_minus_d * (shadow_[i] - values[i]);
}

}  // namespace mnist_async
