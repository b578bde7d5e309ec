#include "mnist/batcher.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include "mnist/error.h"

namespace asyncps::mnist {

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  // Reject the lowest (2^64 mod n) values so that r % n is exactly uniform.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

Batcher::Batcher(const Split& split, int batch_size, std::uint64_t seed, bool shuffle)
    : split_(&split), batch_size_(batch_size), shuffle_(shuffle), rng_(seed) {
  if (batch_size <= 0)
    throw DataError("mnist::Batcher: batch_size must be positive, got " +
                                std::to_string(batch_size));
  if (split.size() == 0) throw DataError("mnist::Batcher: the split is empty");
  if (split.size() > static_cast<std::size_t>(INT32_MAX))
    throw DataError("mnist::Batcher: the split has more rows than next_rows can name");
  if (split.images.size() != split.size() * kPixels)
    throw DataError("mnist::Batcher: split has " + std::to_string(split.size()) +
                                " labels but " + std::to_string(split.images.size()) +
                                " pixels (expected " + std::to_string(kPixels) + " per image)");
  order_.resize(split.size());
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  start_epoch();
}

void Batcher::start_epoch() {
  pos_ = 0;
  if (!shuffle_) return;  // order_ stays 0,1,2,...
  // Fisher-Yates, from the back.
  for (std::size_t i = order_.size() - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(uniform_below(rng_, i + 1));
    std::swap(order_[i], order_[j]);
  }
}

void Batcher::next_rows(std::span<std::int32_t> rows) {
  if (rows.size() != static_cast<std::size_t>(batch_size_))
    throw DataError("mnist::Batcher::next_rows: expected " + std::to_string(batch_size_) + " rows, got " +
                    std::to_string(rows.size()));
  for (auto& r : rows) {
    r = static_cast<std::int32_t>(order_[pos_]);
    ++served_;
    if (++pos_ == order_.size()) {
      ++epoch_;
      start_epoch();
    }
  }
}

void Batcher::next(std::span<float> x, std::span<std::uint8_t> y) {
  const auto b = static_cast<std::size_t>(batch_size_);
  if (x.size() != b * kPixels || y.size() != b)
    throw DataError("mnist::Batcher::next: expected x of " +
                                std::to_string(b * kPixels) + " floats and y of " +
                                std::to_string(b) + " labels, got " + std::to_string(x.size()) +
                                " and " + std::to_string(y.size()));
  rows_.resize(b);
  next_rows(rows_);
  const float* images = split_->images.data();
  for (std::size_t k = 0; k < b; ++k) {
    const auto idx = static_cast<std::size_t>(rows_[k]);
    std::copy_n(images + idx * kPixels, kPixels, x.begin() + static_cast<std::ptrdiff_t>(k * kPixels));
    y[k] = split_->labels[idx];
  }
}

}  // namespace asyncps::mnist
