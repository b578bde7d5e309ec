// defines: exponential_decay, MovingAverage
#include "schedule.h"

#include <algorithm>
#include <cmath>

#include "asyncps/error.h"
#include "nn/updates.h"

namespace mnist_async {

double exponential_decay(double base, double rate, std::int64_t step, double decay_steps) {
  // lr = base * rate^(step / decay_steps)
  return base * std::pow(rate, static_cast<double>(step) / decay_steps);
}

MovingAverage::MovingAverage(std::span<const float> initial, double decay, Correction correction)
    : level_(initial.begin(), initial.end()), decay_(decay), correction_(correction) {
  if (correction_ == Correction::trend) smooth_ = level_;
}

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
  if (values.size() != level_.size()) throw asyncps::Error("MovingAverage::apply: size differs from the average");
  const std::int64_t from = applied_ && global_step > last_ ? last_ : global_step - 1;
  applied_ = true;
  last_ = global_step;
  average_stale_ = true;
  const float a = static_cast<float>(1.0 - decay_over(decay_, from, global_step));
  const std::size_t n = level_.size();
  float* level = level_.data();
  const float* x = values.data();
  if (correction_ == Correction::none) {
    // level -= (1 - D) * (level - x)
    asyncps::nn::ema_step(level, x, n, a);
    return;
  }
  // level -= (1 - D) * (level - x); smooth -= (1 - D) * (smooth - level), the new level (one pass)
  asyncps::nn::ema_trend_step(level, smooth_.data(), x, n, a);
}

std::span<const float> MovingAverage::average() {
  if (correction_ == Correction::none) return level_;
  // average = 2 * level - smooth: a linear trend's lag d / (1 - d) in the level, 2 d / (1 - d)
  // in the smooth, none in the difference
  if (average_stale_) {
    average_.resize(level_.size());
    asyncps::nn::trend_average(average_.data(), level_.data(), smooth_.data(), level_.size());
    average_stale_ = false;
  }
  return average_;
}

void MovingAverage::restore(std::span<const float> average) {
  if (average.size() != level_.size()) throw asyncps::Error("MovingAverage::restore: size differs from the average");
  level_.assign(average.begin(), average.end());
  if (correction_ == Correction::trend) smooth_ = level_;
  average_stale_ = true;
}

}  // namespace mnist_async
