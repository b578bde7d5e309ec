// defines: row_rules (the registration of every row rule), find_row_rule, row_rule, state_width
#include "core/row_rule.h"

#include "asyncps/error.h"

namespace asyncps::detail {

const RowRule& sgd_rule();
const RowRule& adagrad_rule();
const RowRule& ftrl_rule();

std::span<const RowRule* const> row_rules() {
  static const RowRule* const kAll[] = {&sgd_rule(), &adagrad_rule(), &ftrl_rule()};
  return kAll;
}

const RowRule* find_row_rule(RowOptimizer id) noexcept {
  for (const RowRule* r : row_rules())
    if (r->id() == id) return r;
  return nullptr;
}

const RowRule& row_rule(RowOptimizer id) {
  if (const RowRule* r = find_row_rule(id)) return *r;
  throw ConfigError("unknown RowOptimizer (" + std::to_string(static_cast<int>(id)) + ")");
}

std::string spec_problem(const RowRule& rule, const TableSpec& spec) {
  for (const RowRule* other : row_rules())
    if (other != &rule)
      for (const SpecField& f : other->fields())
        if (!f.is_default(spec))
          return std::string(f.name) + " is " + other->label() + "'s: it does nothing for " + rule.label() + " rows";
  return rule.spec_problem(spec);
}

int state_width(const RowRule& rule, int dim) {
  int w = 0;
  for (const auto& b : rule.state(dim)) w += b.width;
  return w;
}

}  // namespace asyncps::detail
