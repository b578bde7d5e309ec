// Proves: the learning-rate and EMA schedules follow the TF1 recipe's formulas at steps 0, 10,
// 100 and 1000.
#include <catch2/catch.hpp>

#include <utility>
#include <vector>

#include "momentum.h"
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
  ema.apply(v, 1000);  // d = 0.99
  CHECK(ema.shadow()[0] == Approx(0.99 * (0.1 * 1 + 0.9 * 3) + 0.01 * 3));
}

TEST_CASE("momentum pushes mu*v + g: the velocity follows a hand-computed sequence; a rejected push leaves it",
          "[momentum]") {
  mnist_async::Momentum m(2, 0.5);
  const std::vector<float> g1 = {1.0f, -2.0f}, g2 = {0.5f, 0.0f}, g3 = {2.0f, 4.0f};
  auto v = m.propose(g1);  // 0.5*0 + g1
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.0f, -2.0f});
  m.commit();
  v = m.propose(g2);  // 0.5*(1,-2) + (0.5,0) = (1, -1)
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.0f, -1.0f});
  m.commit();
  (void)m.propose(g3);  // not committed: (a non-finite gradient's push was rejected)
  v = m.propose(g2);    // from (1,-1): 0.5*(1,-1) + (0.5,0) = (1, -0.5)
  CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.0f, -0.5f});
  m.commit();
  CHECK(std::vector<float>(m.velocity().begin(), m.velocity().end()) == std::vector<float>{1.0f, -0.5f});
}
