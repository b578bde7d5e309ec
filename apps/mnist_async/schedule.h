// defines: mnist_async::exponential_decay, mnist_async::MovingAverage
// The schedules of the TF1 recipe, as functions of the global step: the app's, not the
// library's (libasyncps moves parameters; what a model does with its learning rate and its
// average is the model's).
//
//   float lr = mnist_async::exponential_decay(0.01f, 0.99f, global_step, 60000.0 / 128);
//   mnist_async::MovingAverage ema(initial_params, 0.99f);
//   ema.apply(params, global_step);      // shadow -= (1 - d) * (shadow - params)
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace mnist_async {

// base * rate^(step / decay_steps), continuous (TF's exponential_decay with staircase=False).
double exponential_decay(double base, double rate, std::int64_t step, double decay_steps);

// An exponential moving average of a parameter vector with TF's num_updates warm-up:
// d = min(decay, (1 + n) / (10 + n)). Shadows start at the values given to the constructor.
class MovingAverage {
 public:
  MovingAverage(std::span<const float> initial, double decay);
  static double decay_at(double decay, std::int64_t num_updates);
  // shadow -= (1 - d) * (shadow - values), d = decay_at(decay, num_updates)
  void apply(std::span<const float> values, std::int64_t num_updates);
  std::span<const float> shadow() const noexcept { return shadow_; }
  std::span<float> shadow() noexcept { return shadow_; }
  double decay() const noexcept { return decay_; }

 private:
  std::vector<float> shadow_;
  double decay_;
};

}  // namespace mnist_async
