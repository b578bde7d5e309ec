// defines: mnist_async::exponential_decay, mnist_async::MovingAverage
// The schedules of the TF1 recipe, as functions of the global step: the app's, not the
// library's (libasyncps moves parameters; what a model does with its learning rate and its
// average is the model's).
//
//   float lr = mnist_async::exponential_decay(0.01f, 0.99f, global_step, 60000.0 / 128);
//   mnist_async::MovingAverage ema(initial_params, 0.99, MovingAverage::Correction::trend);
//   ema.apply(params, global_step);      // level -= (1 - D) * (level - params), D: the global
//                                        // steps since the last apply
//   evaluate(ema.average());             // the level, or 2 * level - smooth with trend
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
// those k steps, level <- D * level + (1 - D) * values with D = d(n-k+1) * ... * d(n), so
// that it averages over the same number of global steps at any W (applied once per chief step
// with one d, it averaged over W times more: the EMA lagged, 0.8948 against 0.9191 at W = 8).
//
// Correction::trend (--moving_average_correction trend, the default) removes the average's lag:
// a second average of the first, smooth <- D * smooth + (1 - D) * level, and the average is
// 2 * level - smooth (Brown's double exponential smoothing). While the parameters still move
// steadily, the plain EMA trails them by about d / (1 - d) global steps (99 at 0.99); the
// corrected one is where they are, with their noise still averaged out. (At 3 epochs of the
// tutorial's model, plain async: TF1's EMA 0.22 pp under the final model at W = 1, the corrected
// one +0.06 / +0.37 / +0.56 / +2.24 pp above it at W = 1 / 2 / 4 / 8; docs/CONVERGENCE.md.)
// Correction::none is TF1's EMA, the level.
// Both start at the values given to the constructor.
class MovingAverage {
 public:
  enum class Correction { none, trend };
  MovingAverage(std::span<const float> initial, double decay, Correction correction = Correction::none);
  static double decay_at(double decay, std::int64_t num_updates);
  // The product of decay_at(decay, j) for j in (from, to]: what k = to - from steps keep.
  static double decay_over(double decay, std::int64_t from, std::int64_t to);
  // level -= (1 - D) * (level - values) (and smooth -= (1 - D) * (smooth - level) with trend),
  // D = decay_over(decay, last, global_step) where last is the global step of the previous apply
  // (the first apply, and one at a step not past the last, count one step:
  // D = decay_at(decay, global_step)).
  void apply(std::span<const float> values, std::int64_t global_step);
  // What is evaluated, exported and checkpointed: the level, or 2 * level - smooth with trend
  // (computed when asked after an apply or restore, not on every apply).
  std::span<const float> average();
  // A restarted chief continues from the average a checkpoint holds: it becomes the level, and
  // with trend the smooth too (a checkpoint holds one vector: the trend starts again from zero,
  // the average itself goes on unchanged).
  void restore(std::span<const float> average);
  std::span<const float> level() const noexcept { return level_; }
  double decay() const noexcept { return decay_; }
  Correction correction() const noexcept { return correction_; }

 private:
  std::vector<float> level_, smooth_, average_;  // smooth_ and average_: trend only
  double decay_;
  Correction correction_;
  std::int64_t last_ = -1;  // the global step of the previous apply (-1: none yet)
  bool applied_ = false;
  bool average_stale_ = true;  // trend: average_ predates the last apply or restore
};

}  // namespace mnist_async
