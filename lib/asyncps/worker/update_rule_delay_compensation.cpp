// defines: delay compensation (DC-ASGD, Zheng et al. 2017; Options::dc_lambda), an UpdateRule
#include "core/vector_ops.h"
#include "worker/update_rule.h"

namespace asyncps::detail {
namespace {

// Pushes g + lambda * g*g*(w_now - w_read) instead of g: w_read the parameters the gradient was
// computed at, w_now the arena read again at the step's end (one more pull).
class DelayCompensation final : public UpdateRule {
 public:
  explicit DelayCompensation(const Options& o) : lambda_(o.dc_lambda) {}

  void began(std::span<const float> params) override { read_.assign(params.begin(), params.end()); }  // w_read

  void apply(StepView& step, std::span<const float>& grad, float& /*scale*/) override {
    const std::span<const float> now = step.parameters_now();  // [arena]
    out_.resize(grad.size());
    dc_correct(out_.data(), grad.data(), now.data(), read_.data(), grad.size(), lambda_);
    grad = out_;
  }

 private:
  float lambda_;
  AlignedFloats read_, out_;  // [arena] each
};

}  // namespace

std::unique_ptr<UpdateRule> make_delay_compensation(const Options& options) {
  return std::make_unique<DelayCompensation>(options);
}

}  // namespace asyncps::detail
