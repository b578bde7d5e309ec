// defines: auc, auc_text, log_loss
#include "metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace ctr_async {

double auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney: the positives' rank sum, ties sharing their mean rank
  double rank_sum = 0, positives = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2;  // ranks from 1
    for (std::size_t k = i; k < j; ++k)
      if (labels[order[k]] > 0.5f) rank_sum += mean_rank, positives += 1;
    i = j;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

std::string auc_text(double auc) {
  if (std::isnan(auc)) return "n/a (one class only)";
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", auc);
  return b;
}

double log_loss(const std::vector<float>& logits, const std::vector<float>& labels) {
  double sum = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double z = logits[i];
    // log(1 + e^z) - y z, without overflow
    sum += std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))) - labels[i] * z;
  }
  return logits.empty() ? 0 : sum / static_cast<double>(logits.size());
}

}  // namespace ctr_async
