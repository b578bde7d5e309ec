// defines: SplitMix64, make_blobs
#include "blobs.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace logreg {

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SplitMix64::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

std::size_t SplitMix64::below(std::size_t n) { return static_cast<std::size_t>(uniform() * static_cast<double>(n)); }

namespace {

Dataset sample(SplitMix64& rng, const std::vector<double>& centers, const BlobSpec& spec, int n) {
  Dataset d;
  d.features = spec.features;
  d.classes = spec.classes;
  d.x.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(spec.features));
  d.y.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int c = i % spec.classes;  // balanced classes, interleaved
    d.y[static_cast<std::size_t>(i)] = c;
    for (int f = 0; f < spec.features; ++f) {
      const std::size_t k = static_cast<std::size_t>(c) * static_cast<std::size_t>(spec.features) + static_cast<std::size_t>(f);
      d.x[static_cast<std::size_t>(i) * static_cast<std::size_t>(spec.features) + static_cast<std::size_t>(f)] =
          static_cast<float>(centers[k] + spec.noise * rng.normal());
    }
  }
  return d;
}

}  // namespace

Blobs make_blobs(const BlobSpec& spec) {
  if (spec.classes < 2 || spec.features < 1 || spec.train < 1 || spec.test < 1)
    throw std::invalid_argument("blobs: classes must be >= 2 and features, train, test >= 1");
  if (!(spec.noise >= 0) || !(spec.center_scale > 0))
    throw std::invalid_argument("blobs: noise must be >= 0 and center_scale > 0");
  SplitMix64 rng(spec.seed);
  std::vector<double> centers(static_cast<std::size_t>(spec.classes) * static_cast<std::size_t>(spec.features));
  for (double& c : centers) c = spec.center_scale * rng.normal();  // mu_c ~ N(0, scale^2 I)
  Blobs b;
  b.train = sample(rng, centers, spec, spec.train);
  b.test = sample(rng, centers, spec, spec.test);
  return b;
}

}  // namespace logreg
