// Proves: the learning-rate and EMA schedules follow the TF1 recipe's formulas at steps 0, 10,
// 100 and 1000; the EMA advances once per global step, whatever the steps between the chief's
// applies (W workers); momentum's velocity, its staleness correction, Adam's and Adagrad's
// directions follow their formulas.
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
  MovingAverage ema(init, 0.99);
  CHECK(ema.shadow()[0] == 1.f);
  std::vector<float> v{3.f, 2.f};
  ema.apply(v, 0);  // d = 0.1: shadow = 0.1*shadow + 0.9*v
  CHECK(ema.shadow()[0] == Approx(0.1 * 1 + 0.9 * 3));
  CHECK(ema.shadow()[1] == Approx(0.1 * -2 + 0.9 * 2));
  ema.apply(v, 1);  // the next global step: d = 2/11
  const double after1 = 2.0 / 11 * (0.1 * 1 + 0.9 * 3) + 9.0 / 11 * 3;
  CHECK(ema.shadow()[0] == Approx(after1));
}

TEST_CASE("EMA advances by the global steps since its last apply, as W chief-less steps of TF1 would", "[schedule][ema]") {
  // the chief applies at global steps 1000 and 1008 (8 workers): the second apply is 8 steps of d = 0.99
  const std::vector<float> init{1.f, -2.f}, v{3.f, 2.f};
  MovingAverage chief(init, 0.99), every(init, 0.99);
  chief.apply(v, 1000);
  every.apply(v, 1000);
  chief.apply(v, 1008);
  for (std::int64_t s = 1001; s <= 1008; ++s) every.apply(v, s);  // one apply per global step
  CHECK(chief.shadow()[0] == Approx(every.shadow()[0]).epsilon(1e-6));
  CHECK(chief.shadow()[1] == Approx(every.shadow()[1]).epsilon(1e-6));
  // by hand: from s0 after step 1000, 8 steps keep 0.99^8 of it
  const double s0 = 0.99 * 1 + 0.01 * 3;
  CHECK(chief.shadow()[0] == Approx(std::pow(0.99, 8) * s0 + (1 - std::pow(0.99, 8)) * 3).epsilon(1e-6));
  // in the warm-up the factors differ: steps 1..3 keep (2/11)(3/12)(4/13)
  CHECK(MovingAverage::decay_over(0.99, 0, 3) == Approx(2.0 / 11 * 3.0 / 12 * 4.0 / 13));
  CHECK(MovingAverage::decay_over(0.99, 5, 5) == 1.0);  // no step: nothing changes
  // a step not past the last (a restarted chief, the same step twice) counts one step
  MovingAverage again(init, 0.99);
  again.apply(v, 50);
  const float before = again.shadow()[0];
  again.apply(v, 50);
  CHECK(again.shadow()[0] == Approx(MovingAverage::decay_at(0.99, 50) * before + (1 - MovingAverage::decay_at(0.99, 50)) * 3));
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
