// defines: the name tables of asyncps/option_choices.h
#include "asyncps/option_choices.h"

#include <vector>

#include "core/row_rule.h"

namespace asyncps {

std::span<const Choice<Mode>> choices(Mode) {
  static constexpr Choice<Mode> kAll[] = {{"async", Mode::Async}, {"sync", Mode::Sync}, {"ssp", Mode::Ssp}};
  static_assert(Mode{} == Mode::Async);  // the default first
  return kAll;
}

std::span<const Choice<PullMethod>> choices(PullMethod) {
  static constexpr Choice<PullMethod> kAll[] = {{"get_accumulate", PullMethod::GetAccumulate}, {"get", PullMethod::Get}};
  static_assert(PullMethod{} == PullMethod::GetAccumulate);
  return kAll;
}

std::span<const Choice<ServerProgress>> choices(ServerProgress) {
  static constexpr Choice<ServerProgress> kAll[] = {
      {"auto", ServerProgress::Auto}, {"poll", ServerProgress::Poll}, {"wake", ServerProgress::Wake}};
  static_assert(ServerProgress{} == ServerProgress::Auto);
  return kAll;
}

// (from the registered row rules: a rule added there is named here)
std::span<const Choice<RowOptimizer>> choices(RowOptimizer) {
  static const std::vector<Choice<RowOptimizer>> kAll = [] {
    std::vector<Choice<RowOptimizer>> all;
    for (const detail::RowRule* r : detail::row_rules()) all.push_back({r->name(), r->id()});
    return all;
  }();
  static_assert(RowOptimizer{} == RowOptimizer::Sgd);
  return kAll;
}

}  // namespace asyncps
