// defines: asyncps::detail::UpdateRule, StepView, update_rules
// A dense update rule: one part of an async or ssp step between the gradient and the push
// (Options::staleness_lr, Options::dc_lambda). The step (ClaimedSteps, worker/step_modes.cpp)
// tells every rule in effect the parameters it pulled, then lets each change the gradient or
// the scale in turn before it pushes; it never asks which rules there are.
//
// Adding one: a file with a class that derives from UpdateRule, and its row in
// update_rules.cpp (when it is in effect, how it is made). Its options, their checks and their
// agreement across ranks are the options' (core/validate.cpp, runtime/rank_agreement.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "asyncps/options.h"

namespace asyncps::detail {

// What a rule may ask of the step it is part of. Each answer costs what it says, once a step.
class StepView {
 public:
  virtual ~StepView() = default;
  // This update's staleness tau: the steps claimed by others since this one's (one read of the
  // control block, the first time a step asks; the step records it in the histogram).
  virtual std::int64_t staleness() = 0;
  // The parameters as they are now (one pull of the arena, ordered after this worker's push).
  virtual std::span<const float> parameters_now() = 0;
};

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // The parameters this step's gradient is computed at (as pulled at its start).
  virtual void began(std::span<const float> /*params*/) {}
  // At the step's end, before the push: `grad` and `scale` as the rules before this one left
  // them. A rule that changes the gradient points `grad` at a buffer of its own.
  virtual void apply(StepView& step, std::span<const float>& grad, float& scale) = 0;
};

// The rules `options` put in effect, in the order they apply. `workers`: the job's.
std::vector<std::unique_ptr<UpdateRule>> update_rules(const Options& options, int workers);

}  // namespace asyncps::detail
