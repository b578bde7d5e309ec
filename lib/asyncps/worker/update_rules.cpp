// defines: update_rules (the registry of dense update rules: one row each)
#include <functional>

#include "worker/update_rule.h"

namespace asyncps::detail {

std::unique_ptr<UpdateRule> make_staleness_lr(const Options& options, int workers);  // update_rule_staleness_lr.cpp
std::unique_ptr<UpdateRule> make_delay_compensation(const Options& options);          // update_rule_delay_compensation.cpp

namespace {
struct Row {
  bool (*in_effect)(const Options&);
  std::unique_ptr<UpdateRule> (*make)(const Options&, int workers);
};
// In the order they apply (scale and gradient commute: the order changes no result).
const Row kRules[] = {
    {[](const Options& o) { return o.staleness_lr; }, [](const Options& o, int w) { return make_staleness_lr(o, w); }},
    {[](const Options& o) { return o.dc_lambda > 0; }, [](const Options& o, int) { return make_delay_compensation(o); }},
};
}  // namespace

std::vector<std::unique_ptr<UpdateRule>> update_rules(const Options& options, int workers) {
  std::vector<std::unique_ptr<UpdateRule>> rules;
  for (const Row& r : kRules)
    if (r.in_effect(options)) rules.push_back(r.make(options, workers));
  return rules;
}

}  // namespace asyncps::detail
