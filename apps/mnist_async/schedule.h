// defines: mnist_async::exponential_decay, mnist_async::MovingAverage
// The schedules of the TF1 recipe, as functions of the global step: the app's, not the
// library's (libasyncps moves parameters; what a model does with its learning rate and its
// average is the model's).
//
//   float lr = mnist_async::exponential_decay(0.01f, 0.99f, global_step, 60000.0 / 128);
//   mnist_async::MovingAverage ema(initial_params, 0.99f);
//   ema.apply(params, global_step);      // shadow -= (1 - D) * (shadow - params), D: the global
//                                        // steps since the last apply
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace mnist_async {

// base * rate^(step / decay_steps), continuous (TF's exponential_decay with staircase=False).
double exponential_decay(double base, double rate, std::int64_t step, double decay_steps);

// An exponential moving average of a parameter vector with TF's num_updates warm-up:
// d = min(decay, (1 + n) / (10 + n)), advanced once per GLOBAL step, as TF1's chief-side
// ExponentialMovingAverage is by every worker's update. The chief applies it once per step of
// its own, k global steps apart (about W with W workers): each apply advances the average by
// those k steps, shadow <- D * shadow + (1 - D) * values with D = d(n-k+1) * ... * d(n), so
// that it averages over the same number of global steps at any W (applied once per chief step
// with one d, it averaged over W times more: the EMA lagged, 0.8948 against 0.9191 at W = 8).
// Shadows start at the values given to the constructor.
class MovingAverage {
 public:
  MovingAverage(std::span<const float> initial, double decay);
  static double decay_at(double decay, std::int64_t num_updates);
  // The product of decay_at(decay, j) for j in (from, to]: what k = to - from steps keep.
  static double decay_over(double decay, std::int64_t from, std::int64_t to);
  // shadow -= (1 - D) * (shadow - values), D = decay_over(decay, last, global_step) where last is
  // the global step of the previous apply (the first apply, and one at a step not past the
  // last, count one step: D = decay_at(decay, global_step)).
  void apply(std::span<const float> values, std::int64_t global_step);
  std::span<const float> shadow() const noexcept { return shadow_; }
  std::span<float> shadow() noexcept { return shadow_; }
  double decay() const noexcept { return decay_; }

 private:
  std::vector<float> shadow_;
  double decay_;
  std::int64_t last_ = -1;  // the global step of the previous apply (-1: none yet)
  bool applied_ = false;
};

}  // namespace mnist_async
