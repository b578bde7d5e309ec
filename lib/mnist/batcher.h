#pragma once

// Endless mini-batch iterator over a Split, like TF1's DataSet.next_batch:
// each epoch visits every example once in a freshly shuffled order, and when an
// epoch runs out mid-batch the batch is completed from the next (reshuffled) epoch.
// The order depends only on the seed: std::mt19937_64 plus our own Fisher-Yates
// and bounded-integer mapping, so it is identical across standard libraries.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "mnist/dataset.h"
#include "mnist/error.h"

namespace asyncps::mnist {

class Batcher {
 public:
  // The split must outlive the Batcher. shuffle=false serves 0,1,2,... repeating.
  // Throws DataError for batch_size <= 0, an empty split, or a split
  // whose images do not hold kPixels floats per label.
  Batcher(const Split& split, int batch_size, std::uint64_t seed, bool shuffle = true);

  // Fills x (batch_size*kPixels floats) and y (batch_size labels) with the next batch.
  // Throws DataError if the spans have the wrong size.
  void next(std::span<float> x, std::span<std::uint8_t> y);
  // The same batch as next() would serve, as the split's row numbers (batch_size values): for a
  // backend that holds the split itself (nn::Backend::set_dataset). Throws DataError on a wrong size.
  void next_rows(std::span<std::int32_t> rows);

  // Completed passes over the split (= examples_served() / size, rounded down).
  std::uint64_t epoch() const { return epoch_; }
  std::uint64_t examples_served() const { return served_; }
  int batch_size() const { return batch_size_; }

 private:
  void start_epoch();

  const Split* split_;
  int batch_size_;
  bool shuffle_;
  std::mt19937_64 rng_;
  std::vector<std::size_t> order_;
  std::vector<std::int32_t> rows_;  // next()'s scratch
  std::size_t pos_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t served_ = 0;
};

// Uniform integer in [0, n), n > 0, by rejection sampling on rng's 64-bit output
// (unbiased; independent of the standard library's distributions).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);

}  // namespace asyncps::mnist
