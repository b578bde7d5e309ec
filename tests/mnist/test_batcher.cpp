#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "mnist/batcher.h"

using namespace asyncps::mnist;

namespace {

// A split of n images where every pixel of image i is the float i, label i % 10.
Split numbered_split(std::size_t n) {
  Split s;
  s.images.resize(n * kPixels);
  s.labels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::fill_n(s.images.begin() + static_cast<std::ptrdiff_t>(i * kPixels), kPixels,
                static_cast<float>(i));
    s.labels[i] = static_cast<std::uint8_t>(i % 10);
  }
  return s;
}

// The example indices of the next batch (checking x and y agree with each other).
std::vector<std::size_t> next_ids(Batcher& b) {
  const auto n = static_cast<std::size_t>(b.batch_size());
  std::vector<float> x(n * kPixels, -1.0f);
  std::vector<std::uint8_t> y(n, 255);
  b.next(x, y);
  std::vector<std::size_t> ids(n);
  for (std::size_t k = 0; k < n; ++k) {
    const float v = x[k * kPixels];
    REQUIRE(std::all_of(x.begin() + static_cast<std::ptrdiff_t>(k * kPixels),
                        x.begin() + static_cast<std::ptrdiff_t>((k + 1) * kPixels),
                        [v](float p) { return p == v; }));
    ids[k] = static_cast<std::size_t>(v);
    REQUIRE(y[k] == ids[k] % 10);
  }
  return ids;
}

// The next `count` example indices, batch by batch (count a multiple of the batch size).
std::vector<std::size_t> take(Batcher& b, std::size_t count) {
  std::vector<std::size_t> out;
  while (out.size() < count) {
    const auto ids = next_ids(b);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

bool is_permutation_of_iota(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != i) return false;
  return true;
}

}  // namespace

TEST_CASE("Batcher: one epoch with a dividing batch size serves each example exactly once",
          "[batcher]") {
  const Split s = numbered_split(100);
  Batcher b(s, 10, 42);
  const auto epoch0 = take(b, 100);
  CHECK(is_permutation_of_iota(epoch0));
  CHECK(b.epoch() == 1);
  CHECK(b.examples_served() == 100);
  std::vector<std::size_t> natural(100);
  std::iota(natural.begin(), natural.end(), std::size_t{0});
  CHECK(epoch0 != natural);  // it really is shuffled
}

TEST_CASE("Batcher: each epoch is a fresh permutation in a different order", "[batcher]") {
  const Split s = numbered_split(100);
  Batcher b(s, 20, 7);
  const auto e0 = take(b, 100), e1 = take(b, 100), e2 = take(b, 100);
  CHECK(is_permutation_of_iota(e1));
  CHECK(is_permutation_of_iota(e2));
  CHECK(e0 != e1);
  CHECK(e1 != e2);
  CHECK(b.epoch() == 3);
}

TEST_CASE("Batcher: the same seed gives the same order, different seeds different orders",
          "[batcher]") {
  const Split s = numbered_split(100);
  Batcher a(s, 25, 1234), same(s, 25, 1234), other(s, 25, 1235);
  const auto ea = take(a, 300);
  CHECK(take(same, 300) == ea);
  CHECK(take(other, 300) != ea);
}

TEST_CASE("Batcher: the order is pinned (own Fisher-Yates, same on every standard library)",
          "[batcher]") {
  const Split s = numbered_split(10);
  Batcher b(s, 10, 42);
  const auto e0 = take(b, 10);
  INFO("epoch 0 order changed; the shuffle is meant to be reproducible across builds");
  CHECK(e0 == std::vector<std::size_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6});
}

TEST_CASE("Batcher: a partial last batch is completed from the next, reshuffled epoch",
          "[batcher]") {
  const Split s = numbered_split(10);
  Batcher b(s, 4, 99);
  const auto b0 = next_ids(b), b1 = next_ids(b);
  CHECK(b.epoch() == 0);
  CHECK(b.examples_served() == 8);
  const auto b2 = next_ids(b);  // 2 from epoch 0, then 2 from epoch 1
  CHECK(b.epoch() == 1);
  CHECK(b.examples_served() == 12);

  std::vector<std::size_t> epoch0(b0.begin(), b0.end());
  epoch0.insert(epoch0.end(), b1.begin(), b1.end());
  epoch0.insert(epoch0.end(), b2.begin(), b2.begin() + 2);
  CHECK(is_permutation_of_iota(epoch0));

  // Epoch 1 = the last two of b2 plus the next 8: again every example exactly once.
  std::vector<std::size_t> epoch1(b2.begin() + 2, b2.end());
  const auto rest = take(b, 8);
  epoch1.insert(epoch1.end(), rest.begin(), rest.end());
  CHECK(is_permutation_of_iota(epoch1));
  CHECK(epoch1 != epoch0);
  CHECK(b.epoch() == 2);
  CHECK(b.examples_served() == 20);
}

TEST_CASE("Batcher: shuffle=false serves the natural order, wrapping across epochs",
          "[batcher]") {
  const Split s = numbered_split(10);
  Batcher b(s, 4, 5, /*shuffle=*/false);
  CHECK(next_ids(b) == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(next_ids(b) == std::vector<std::size_t>{4, 5, 6, 7});
  CHECK(next_ids(b) == std::vector<std::size_t>{8, 9, 0, 1});
  CHECK(b.epoch() == 1);
  CHECK(next_ids(b) == std::vector<std::size_t>{2, 3, 4, 5});
}

TEST_CASE("Batcher: a batch larger than the split spans several epochs", "[batcher]") {
  const Split s = numbered_split(3);
  Batcher b(s, 7, 5, /*shuffle=*/false);
  CHECK(next_ids(b) == std::vector<std::size_t>{0, 1, 2, 0, 1, 2, 0});
  CHECK(b.epoch() == 2);
  CHECK(b.examples_served() == 7);
}

TEST_CASE("Batcher: bad arguments are mnist::DataError", "[batcher]") {
  const Split s = numbered_split(5);
  CHECK_THROWS_AS(Batcher(s, 0, 1), DataError);
  CHECK_THROWS_AS(Batcher(s, -3, 1), DataError);
  CHECK_THROWS_AS(Batcher(Split{}, 4, 1), DataError);

  Batcher b(s, 2, 1);
  std::vector<float> x(3 * kPixels);
  std::vector<std::uint8_t> y(2);
  CHECK_THROWS_AS(b.next(x, y), DataError);
}

TEST_CASE("uniform_below stays in range and hits every value", "[batcher]") {
  std::mt19937_64 rng(3);
  std::vector<int> hits(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const auto v = uniform_below(rng, 7);
    REQUIRE(v < 7);
    ++hits[v];
  }
  for (int h : hits) CHECK(h > 800);
  CHECK(uniform_below(rng, 1) == 0);
}

TEST_CASE("next_rows names the very batches next serves, epochs and reshuffles included", "[batcher]") {
  const Split s = numbered_split(23);
  Batcher by_images(s, 5, 99), by_rows(s, 5, 99);
  std::vector<std::int32_t> rows(5);
  for (int step = 0; step < 20; ++step) {  // 100 examples: four epochs and a part, batches across them
    by_rows.next_rows(rows);
    const auto ids = next_ids(by_images);
    for (std::size_t k = 0; k < rows.size(); ++k) REQUIRE(static_cast<std::size_t>(rows[k]) == ids[k]);
  }
  CHECK(by_rows.epoch() == by_images.epoch());
  CHECK(by_rows.examples_served() == 100);
  std::vector<std::int32_t> wrong(4);
  CHECK_THROWS_AS(by_rows.next_rows(wrong), DataError);
}
