// defines: logreg::Dataset, logreg::BlobSpec, logreg::make_blobs, logreg::SplitMix64
// The synthetic classification problem of logreg_async: Gaussian blobs. Each class c has a
// centre mu_c ~ N(0, center_scale^2 I) in `features` dimensions; a sample of class c is
// mu_c + N(0, noise^2 I). Equal isotropic covariances make the Bayes classifier linear, so
// multinomial logistic regression can reach it. Generated from a seed with our own generator
// (SplitMix64 + Box-Muller), so the data are the same on every rank, compiler and host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace logreg {

struct Dataset {
  int features = 0;
  int classes = 0;
  std::vector<float> x;  // (n, features), row-major
  std::vector<int> y;    // (n), labels in [0, classes)
  std::size_t size() const noexcept { return y.size(); }
  const float* row(std::size_t i) const noexcept { return x.data() + i * static_cast<std::size_t>(features); }
};

struct BlobSpec {
  int classes = 10;
  int features = 20;
  int train = 8000;
  int test = 2000;
  double center_scale = 1.0;
  double noise = 1.5;
  std::uint64_t seed = 2024;
};

// Splittable 64-bit generator (Steele, Lea, Flood 2014): tiny, fast, the same everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();           // [0, 1)
  double normal();            // N(0, 1), Box-Muller
  std::size_t below(std::size_t n);  // [0, n)

 private:
  std::uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

struct Blobs {
  Dataset train, test;
};

// Throws std::invalid_argument for non-positive sizes or a negative noise.
Blobs make_blobs(const BlobSpec& spec);

}  // namespace logreg
