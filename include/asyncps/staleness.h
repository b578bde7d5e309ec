// defines: asyncps::StalenessHistogram, asyncps::staleness_lr_scale
// Staleness tau of an update: how many steps were claimed between its own step and the next
// claim this worker sends after pushing it (the count that claim returns minus the update's
// step; with Options::overlap the prefetched claim counts the worker's own next step too). The
// updates no later claim covers are measured by one read of the step count when the worker
// drains. Sync mode is always 0. Kept as a histogram so every worker's can be summed.
//
//   const auto& h = worker.staleness();
//   std::printf("tau mean %.2f p50 %lld p99 %lld max %lld\n", h.mean(), h.percentile(50), h.percentile(99), h.max());
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace asyncps {

class StalenessHistogram {
 public:
  static constexpr std::size_t kBins = 1024;  // bins 0..1022 exact; the last holds tau >= 1023

  void record(std::int64_t tau);
  void merge(const StalenessHistogram& other);

  std::uint64_t count() const noexcept { return count_; }
  double mean() const noexcept { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  std::int64_t max() const noexcept { return max_; }
  // Smallest tau with at least p percent of the updates at or below it; 0 with no update.
  // ConfigError for a p outside [0, 100] (NaN included).
  std::int64_t percentile(double p) const;

  // Raw state, for summing across ranks: bins, then {count, sum, max} as doubles
  // (kBins + 3 values). from_vector takes what to_vector (or a sum of them) gave: ConfigError for
  // another length, a value that is negative, not whole or not finite, or a count that is not
  // the bins' sum.
  std::vector<double> to_vector() const;
  static StalenessHistogram from_vector(std::span<const double> v);

 private:
  std::vector<std::uint64_t> bins_ = std::vector<std::uint64_t>(kBins, 0);
  std::uint64_t count_ = 0;
  double sum_ = 0;
  std::int64_t max_ = 0;
};

// The factor Options::staleness_lr multiplies an update of staleness `tau` by:
//   absolute  1 / max(1, tau)^power
//   relative  ((1 + mean_tau) / (1 + tau))^power     (mean_tau: the job's mean staleness)
// A negative tau or mean_tau counts as 0. ConfigError for a power outside (0, 2] (NaN included)
// or a mean_tau that is not finite.
double staleness_lr_scale(std::int64_t tau, double mean_tau, double power, bool relative);

}  // namespace asyncps
