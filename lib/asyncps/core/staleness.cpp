// defines: StalenessHistogram, staleness_lr_scale
#include "asyncps/staleness.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "asyncps/error.h"
#include "core/number_text.h"

namespace asyncps {

void StalenessHistogram::record(std::int64_t tau) {
  tau = std::max<std::int64_t>(tau, 0);
  ++bins_[std::min<std::size_t>(static_cast<std::size_t>(tau), kBins - 1)];
  ++count_;
  sum_ += static_cast<double>(tau);
  max_ = std::max(max_, tau);
}

void StalenessHistogram::merge(const StalenessHistogram& o) {
  for (std::size_t i = 0; i < kBins; ++i) bins_[i] += o.bins_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
}

std::int64_t StalenessHistogram::percentile(double p) const {
  if (!(p >= 0 && p <= 100))
    throw ConfigError("StalenessHistogram::percentile: p must be in [0, 100], got " + detail::number_text(p));
  if (count_ == 0) return 0;
  const double need = std::ceil(p / 100.0 * static_cast<double>(count_));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBins; ++i) {
    seen += bins_[i];
    if (static_cast<double>(seen) >= need && seen > 0) return i == kBins - 1 ? max_ : static_cast<std::int64_t>(i);
  }
  return max_;
}

std::vector<double> StalenessHistogram::to_vector() const {
  std::vector<double> v(bins_.begin(), bins_.end());
  v.push_back(static_cast<double>(count_));
  v.push_back(sum_);
  v.push_back(static_cast<double>(max_));
  return v;
}

StalenessHistogram StalenessHistogram::from_vector(std::span<const double> v) {
  if (v.size() != kBins + 3)
    throw ConfigError("StalenessHistogram::from_vector: needs " + std::to_string(kBins + 3) + " values (to_vector's), got " +
                      std::to_string(v.size()));
  // a count or a tau: whole, >= 0 and below 2**63 (exact in a double up to 2**53)
  const auto whole = [](double x) { return x >= 0 && x < 0x1p63 && x == std::floor(x); };
  StalenessHistogram h;
  double bin_sum = 0;
  for (std::size_t i = 0; i < kBins; ++i) {
    if (!whole(v[i]))
      throw ConfigError("StalenessHistogram::from_vector: bin " + std::to_string(i) + " is not a count: " + detail::number_text(v[i]));
    h.bins_[i] = static_cast<std::uint64_t>(v[i]);
    bin_sum += v[i];
  }
  const double count = v[kBins], sum = v[kBins + 1], max = v[kBins + 2];
  if (!whole(count) || count != bin_sum)
    throw ConfigError("StalenessHistogram::from_vector: count " + detail::number_text(count) + " is not the bins' sum " +
                      detail::number_text(bin_sum));
  if (!(std::isfinite(sum) && sum >= 0) || !whole(max))
    throw ConfigError("StalenessHistogram::from_vector: sum must be finite and >= 0 and max a whole number >= 0, got " +
                      detail::number_text(sum) + " and " + detail::number_text(max));
  h.count_ = static_cast<std::uint64_t>(count);
  h.sum_ = sum;
  h.max_ = static_cast<std::int64_t>(max);
  return h;
}

double staleness_lr_scale(std::int64_t tau, double mean_tau, double power, bool relative) {
  if (!(power > 0 && power <= 2))
    throw ConfigError("staleness_lr_scale: power must be in (0, 2], got " + detail::number_text(power));
  if (!std::isfinite(mean_tau))
    throw ConfigError("staleness_lr_scale: mean_tau must be finite, got " + detail::number_text(mean_tau));
  tau = std::max<std::int64_t>(tau, 0);
  const double t = relative ? (1.0 + static_cast<double>(tau)) / (1.0 + std::max(mean_tau, 0.0))
                            : static_cast<double>(std::max<std::int64_t>(1, tau));
  return 1.0 / (power == 1.0 ? t : power == 0.5 ? std::sqrt(t) : std::pow(t, power));
}

}  // namespace asyncps
