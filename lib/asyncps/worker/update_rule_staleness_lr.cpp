// defines: the staleness-aware learning rate (Options::staleness_lr), an UpdateRule
#include "asyncps/staleness.h"
#include "worker/update_rule.h"

namespace asyncps::detail {
namespace {

// scale / max(1, tau)^power (power 1: Zhang et al.'s 1/tau; 0.5: 1/sqrt(tau)); relative:
// scale * ((1 + mean tau) / (1 + tau))^power, mean tau the job's: W - 1 (Little's law: W
// updates in flight), one more with overlap (the prefetched claim counts the worker's own).
class StalenessLr final : public UpdateRule {
 public:
  StalenessLr(const Options& o, int workers)
      : power_(o.staleness_lr_power), relative_(o.staleness_lr_relative),
        mean_(static_cast<double>(workers - 1 + (o.overlap ? 1 : 0))) {}

  void apply(StepView& step, std::span<const float>& /*grad*/, float& scale) override {
    scale = static_cast<float>(scale * staleness_lr_scale(step.staleness(), mean_, power_, relative_));
  }

 private:
  double power_;
  bool relative_;
  double mean_;
};

}  // namespace

std::unique_ptr<UpdateRule> make_staleness_lr(const Options& options, int workers) {
  return std::make_unique<StalenessLr>(options, workers);
}

}  // namespace asyncps::detail
