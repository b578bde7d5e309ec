// defines: ctr_async::auc, log_loss
#pragma once
#include <vector>

namespace ctr_async {
// Area under the ROC curve of scores against 0/1 labels (ties count half): the probability that
// a random positive scores above a random negative. 0.5 when one class is absent.
double auc(const std::vector<float>& scores, const std::vector<float>& labels);
// Mean -[y log p + (1 - y) log(1 - p)] of logits, computed stably.
double log_loss(const std::vector<float>& logits, const std::vector<float>& labels);
}  // namespace ctr_async
