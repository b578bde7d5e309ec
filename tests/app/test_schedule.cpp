// Proves: the learning-rate and EMA schedules follow the TF1 recipe's formulas at steps 0, 10,
// 100 and 1000; the EMA advances once per global step, whatever the steps between the chief's
// applies (W workers); momentum's velocity, its staleness correction, Adam's and Adagrad's
// directions follow their formulas; the trend-corrected EMA is 2 * level - smooth, has no lag on a
// linear trend (TF1's lags d/(1-d) steps), averages noise, and restores from one vector.
#include <catch2/catch.hpp>

#include <cmath>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "optimizer.h"
#include "schedule.h"

using namespace mnist_async;

TEST_CASE("learning rate is 0.01 * 0.99^(step / (60000/128)), not staircase", "[schedule]") {
  const double steps_per_epoch = 60000.0 / 128;
  // tf.train.exponential_decay(0.01, step, 468.75, 0.99) at these steps, worked out by hand
  // (0.99^(10/468.75) = exp(-0.0213333 * 0.0100503)), not by the formula under test
  const std::pair<std::int64_t, double> expected[] = {
      {0, 0.01}, {10, 0.009997856158186989}, {100, 0.00997858225231019}, {1000, 0.009787875017103122}};
  for (const auto& [s, lr] : expected) CHECK(exponential_decay(0.01, 0.99, s, steps_per_epoch) == Approx(lr).epsilon(1e-12));
  // continuous, not staircase: a staircase would still give 0.01 until step 469
  CHECK(exponential_decay(0.01, 0.99, 10, steps_per_epoch) < 0.01);
  CHECK(exponential_decay(0.01, 0.99, 468, steps_per_epoch) < 0.00991);  // 0.0099002
}

TEST_CASE("EMA decay is min(0.99, (1+n)/(10+n))", "[schedule][ema]") {
  CHECK(MovingAverage::decay_at(0.99, 0) == Approx(0.1));
  CHECK(MovingAverage::decay_at(0.99, 10) == Approx(11.0 / 20.0));
  CHECK(MovingAverage::decay_at(0.99, 100) == Approx(101.0 / 110.0));
  CHECK(MovingAverage::decay_at(0.99, 1000) == Approx(0.99));
}

TEST_CASE("EMA shadow starts at the initial values and moves by (1-d) toward the variable", "[schedule][ema]") {
  std::vector<float> init{1.f, -2.f};
  MovingAverage ema(init, 0.99);  // Correction::none: TF1's EMA, the average is the level
  CHECK(ema.average()[0] == 1.f);
  std::vector<float> v{3.f, 2.f};
  ema.apply(v, 0);  // d = 0.1: shadow = 0.1*shadow + 0.9*v
  CHECK(ema.average()[0] == Approx(0.1 * 1 + 0.9 * 3));
  CHECK(ema.average()[1] == Approx(0.1 * -2 + 0.9 * 2));
  ema.apply(v, 1);  // the next global step: d = 2/11
  const double after1 = 2.0 / 11 * (0.1 * 1 + 0.9 * 3) + 9.0 / 11 * 3;
  CHECK(ema.average()[0] == Approx(after1));
  CHECK(ema.level()[0] == ema.average()[0]);
}

TEST_CASE("trend-corrected EMA is 2*level - smooth, by hand, and has no lag on a linear trend where TF1's lags "
          "d/(1-d) steps", "[schedule][ema]") {
  const std::vector<float> init{1.f};
  MovingAverage ema(init, 0.99, MovingAverage::Correction::trend);
  CHECK(ema.average()[0] == 1.f);
  const std::vector<float> v{3.f};
  ema.apply(v, 0);  // D = 0.1: level = 0.1*1 + 0.9*3 = 2.8; smooth = 0.1*1 + 0.9*2.8 = 2.62
  CHECK(ema.level()[0] == Approx(2.8));
  CHECK(ema.average()[0] == Approx(2 * 2.8 - 2.62));
  ema.apply(v, 1);  // D = 2/11
  const double level = 2.0 / 11 * 2.8 + 9.0 / 11 * 3, smooth = 2.0 / 11 * 2.62 + 9.0 / 11 * level;
  CHECK(ema.average()[0] == Approx(2 * level - smooth));

  // x(t) = 0.01 t past the warm-up, applied every 8 global steps (a chief among 8 workers):
  // TF1's EMA trails by about 8 D / (1 - D) ~ 95 steps (0.95 in x), the corrected one not at all
  const std::vector<float> zero{0.f};
  MovingAverage tf1(zero, 0.99), corrected(zero, 0.99, MovingAverage::Correction::trend);
  std::int64_t t = 0;
  for (; t <= 8000; t += 8) {
    const std::vector<float> x{0.01f * static_cast<float>(t)};
    tf1.apply(x, t);
    corrected.apply(x, t);
  }
  const double now = 0.01 * static_cast<double>(t - 8), D = std::pow(0.99, 8);
  CHECK(now - tf1.average()[0] == Approx(0.01 * 8 * D / (1 - D)).epsilon(1e-3));
  CHECK(std::abs(now - corrected.average()[0]) < 1e-3);
  // on a constant the two agree; noise around it is averaged by both
  MovingAverage flat(zero, 0.99, MovingAverage::Correction::trend);
  double sum_sq = 0;
  std::uint32_t r = 12345;
  for (std::int64_t s = 0; s < 4000; ++s) {
    r = r * 1664525u + 1013904223u;
    const std::vector<float> x{5.f + (static_cast<float>(r >> 8) / 16777216.f - 0.5f)};  // 5 + U(-0.5, 0.5)
    flat.apply(x, s);
    if (s >= 2000) sum_sq += (flat.average()[0] - 5.0) * (flat.average()[0] - 5.0);
  }
  CHECK(std::sqrt(sum_sq / 2000) < 0.3 * std::sqrt(1.0 / 12));  // under 0.3 of the samples' own sd
}

TEST_CASE("a restored trend-corrected EMA continues from the checkpoint's average with no trend", "[schedule][ema]") {
  const std::vector<float> init{0.f, 0.f}, saved{4.f, -1.f}, v{6.f, -1.f};
  MovingAverage ema(init, 0.99, MovingAverage::Correction::trend);
  ema.restore(saved);
  CHECK(ema.average()[0] == 4.f);  // the average goes on unchanged
  CHECK(ema.average()[1] == -1.f);
  ema.apply(v, 5000);  // level = smooth = 4 before; d = 0.99: level 4.02, smooth 4.0002
  CHECK(ema.average()[0] == Approx(2 * 4.02 - (0.99 * 4 + 0.01 * 4.02)));
  CHECK(ema.average()[1] == -1.f);
  const std::vector<float> wrong(3);
  CHECK_THROWS(ema.restore(wrong));
  CHECK_THROWS(ema.apply(wrong, 5001));
}

TEST_CASE("EMA advances by the global steps since its last apply, as W chief-less steps of TF1 would", "[schedule][ema]") {
  // the chief applies at global steps 1000 and 1008 (8 workers): the second apply is 8 steps of d = 0.99
  const std::vector<float> init{1.f, -2.f}, v{3.f, 2.f};
  MovingAverage chief(init, 0.99), every(init, 0.99);
  chief.apply(v, 1000);
  every.apply(v, 1000);
  chief.apply(v, 1008);
  for (std::int64_t s = 1001; s <= 1008; ++s) every.apply(v, s);  // one apply per global step
  CHECK(chief.average()[0] == Approx(every.average()[0]).epsilon(1e-6));
  CHECK(chief.average()[1] == Approx(every.average()[1]).epsilon(1e-6));
  // by hand: from s0 after step 1000, 8 steps keep 0.99^8 of it
  const double s0 = 0.99 * 1 + 0.01 * 3;
  CHECK(chief.average()[0] == Approx(std::pow(0.99, 8) * s0 + (1 - std::pow(0.99, 8)) * 3).epsilon(1e-6));
  // in the warm-up the factors differ: steps 1..3 keep (2/11)(3/12)(4/13)
  CHECK(MovingAverage::decay_over(0.99, 0, 3) == Approx(2.0 / 11 * 3.0 / 12 * 4.0 / 13));
  CHECK(MovingAverage::decay_over(0.99, 5, 5) == 1.0);  // no step: nothing changes
  // a step not past the last (a restarted chief, the same step twice) counts one step
  MovingAverage again(init, 0.99);
  again.apply(v, 50);
  const float before = again.average()[0];
  again.apply(v, 50);
  CHECK(again.average()[0] == Approx(MovingAverage::decay_at(0.99, 50) * before + (1 - MovingAverage::decay_at(0.99, 50)) * 3));
}

TEST_CASE("momentum pushes mu*v + g: the velocity follows a hand-computed sequence; a rejected push leaves it",
          "[momentum]") {
  mnist_async::WorkerOptimizer m(2, {.name = "momentum", .momentum = 0.5, .momentum_correction = "none"});
  const std::vector<float> g1 = {1.0f, -2.0f}, g2 = {0.5f, 0.0f}, g3 = {2.0f, 4.0f};
  auto v = m.propose(g1, 7);  // 0.5*0 + g1 (no correction: the staleness is not used)
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.0f, -2.0f});
  m.commit();
  v = m.propose(g2, 7);  // 0.5*(1,-2) + (0.5,0) = (1, -1)
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.0f, -1.0f});
  m.commit();
  (void)m.propose(g3, 7);  // not committed: (a non-finite gradient's push was rejected)
  v = m.propose(g2, 7);    // from (1,-1): 0.5*(1,-1) + (0.5,0) = (1, -0.5)
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.0f, -0.5f});
  m.commit();
  CHECK(std::vector<float>(m.velocity().begin(), m.velocity().end()) == std::vector<float>{1.0f, -0.5f});
}

TEST_CASE("momentum's staleness correction applies mu^(1+tau) and scales the push by sqrt((1-mu')/(1-mu))",
          "[momentum]") {
  CHECK(corrected_momentum(0.9, 0, "staleness") == 0.9);  // W = 1: as given
  CHECK(corrected_momentum(0.9, 1, "staleness") == Approx(0.81));
  CHECK(corrected_momentum(0.9, 7, "staleness") == Approx(std::pow(0.9, 8)));
  CHECK(corrected_momentum(0.9, 7, "none") == 0.9);
  CHECK(momentum_push_scale(0.9, 0.9) == 1.0);
  CHECK(momentum_push_scale(0.9, 0.81) == Approx(std::sqrt(1.9)));
  mnist_async::WorkerOptimizer m(1, {.name = "momentum", .momentum = 0.9, .momentum_correction = "staleness"});
  const std::vector<float> g = {1.0f};
  (void)m.propose(g, 1);  // v = 1
  m.commit();
  const auto d = m.propose(g, 1);  // v' = 0.81 * 1 + 1 = 1.81; d = sqrt(1.9) * v'
  CHECK(d[0] == Approx(std::sqrt(1.9) * 1.81).epsilon(1e-6));
  CHECK(m.momentum_applied() == Approx(0.81));
  CHECK(m.velocity()[0] == 1.0f);  // (not committed yet)
  m.commit();
  CHECK(m.velocity()[0] == Approx(1.81f));  // the state is the velocity, unscaled
}

TEST_CASE("weight prediction: the gradient point is params - lr * tau * (the direction last pushed), momentum's default",
          "[momentum][prediction]") {
  CHECK(mnist_async::OptimizerConfig{.name = "momentum"}.predicts());  // the default correction
  CHECK_FALSE(mnist_async::OptimizerConfig{.name = "momentum", .momentum_correction = "staleness"}.predicts());
  CHECK_FALSE(mnist_async::OptimizerConfig{.name = "momentum", .momentum_correction = "none"}.predicts());
  CHECK_FALSE(mnist_async::OptimizerConfig{.name = "adam"}.predicts());
  CHECK(mnist_async::OptimizerConfig{.name = "adam", .weight_prediction = true}.predicts());

  mnist_async::WorkerOptimizer m(2, {.name = "momentum", .momentum = 0.5});
  const std::vector<float> params = {1.0f, 2.0f}, g1 = {1.0f, -2.0f}, g2 = {0.5f, 0.0f}, bad = {8.0f, 8.0f};
  std::vector<float> out = {9.0f, 9.0f};
  CHECK_FALSE(m.predict(params, 0.1, 7, out));  // nothing pushed yet: out untouched
  CHECK(out == std::vector<float>{9.0f, 9.0f});
  auto d = m.propose(g1, 7);  // predict applies mu as given: v = g1
  CHECK(m.momentum_applied() == 0.5);
  CHECK(std::vector<float>(d.begin(), d.end()) == g1);
  m.commit();
  REQUIRE(m.predict(params, 0.1, 7, out));  // (1, 2) - 0.1 * 7 * (1, -2)
  CHECK(out[0] == Approx(0.3f));
  CHECK(out[1] == Approx(3.4f));
  d = m.propose(g2, 7);  // v = 0.5 * (1, -2) + (0.5, 0) = (1, -1)
  m.commit();
  (void)m.propose(bad, 7);  // rejected: the prediction keeps the direction that landed
  REQUIRE(m.predict(params, 0.5, 2, out));  // (1, 2) - 0.5 * 2 * (1, -1)
  CHECK(out[0] == Approx(0.0f));
  CHECK(out[1] == Approx(3.0f));
  std::vector<float> wrong(3);
  CHECK_FALSE(m.predict(params, 0.5, 2, wrong));  // a size that is not the model's

  mnist_async::WorkerOptimizer sgd(2, {.name = "sgd", .weight_prediction = true});
  (void)sgd.propose(g1, 3);  // sgd's direction is the gradient itself
  sgd.commit();
  REQUIRE(sgd.predict(params, 0.1, 3, out));  // (1, 2) - 0.3 * (1, -2)
  CHECK(out[0] == Approx(0.7f));
  CHECK(out[1] == Approx(2.6f));
  mnist_async::WorkerOptimizer plain(2, {.name = "sgd"});
  (void)plain.propose(g1, 3);
  plain.commit();
  CHECK_FALSE(plain.predict(params, 0.1, 3, out));  // prediction off: no direction kept
}

TEST_CASE("adam and adagrad follow their formulas on the worker; sgd pushes the gradient itself", "[optimizer]") {
  const std::vector<float> g1 = {0.5f, -1.0f}, g2 = {-0.25f, 2.0f};
  mnist_async::WorkerOptimizer adam(2, {.name = "adam", .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8});
  auto d = adam.propose(g1, 0);  // t = 1: m^ = g, s^ = g^2: d = g / (|g| + eps) = sign(g)
  CHECK(d[0] == Approx(1.0f).epsilon(1e-4));
  CHECK(d[1] == Approx(-1.0f).epsilon(1e-4));
  adam.commit();
  d = adam.propose(g2, 0);  // t = 2, by hand
  for (int i = 0; i < 2; ++i) {
    const double m = 0.9 * 0.1 * g1[i] + 0.1 * g2[i], s = 0.999 * 0.001 * g1[i] * g1[i] + 0.001 * g2[i] * g2[i];
    const double want = (m / (1 - 0.81)) / (std::sqrt(s / (1 - 0.998001)) + 1e-8);
    CHECK(d[static_cast<std::size_t>(i)] == Approx(want).epsilon(1e-5));
  }
  mnist_async::WorkerOptimizer ada(2, {.name = "adagrad", .epsilon = 1e-8, .initial_accumulator = 0.1});
  d = ada.propose(g1, 0);  // a = 0.1 + g^2
  CHECK(d[0] == Approx(0.5 / std::sqrt(0.35)).epsilon(1e-6));
  (void)ada.propose(g2, 0);  // not committed: the accumulator stays
  d = ada.propose(g1, 0);
  CHECK(d[1] == Approx(-1.0 / std::sqrt(1.1)).epsilon(1e-6));
  ada.commit();
  d = ada.propose(g2, 0);  // a = 0.1 + g1^2 + g2^2
  CHECK(d[1] == Approx(2.0 / std::sqrt(5.1)).epsilon(1e-6));
  mnist_async::WorkerOptimizer sgd(2, {});
  CHECK(sgd.propose(g1, 3).data() == g1.data());
  CHECK_THROWS_AS(mnist_async::WorkerOptimizer(2, {.name = "rmsprop"}), asyncps::ConfigError);
}
