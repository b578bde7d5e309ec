// defines: ctr_async::auc, auc_text, log_loss
#pragma once
#include <string>
#include <vector>

namespace ctr_async {
// Area under the ROC curve of scores against 0/1 labels (ties count half): the probability that
// a random positive scores above a random negative. NaN when one class is absent (no pair to
// rank), as scikit-learn refuses it: never a 0.5 that would read as a random model.
double auc(const std::vector<float>& scores, const std::vector<float>& labels);
// "0.8123", or "n/a (one class only)" for a NaN AUC
std::string auc_text(double auc);
// Mean -[y log p + (1 - y) log(1 - p)] of logits, computed stably.
double log_loss(const std::vector<float>& logits, const std::vector<float>& labels);
}  // namespace ctr_async
