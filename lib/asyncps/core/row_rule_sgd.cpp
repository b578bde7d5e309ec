// defines: sgd_rule (RowOptimizer::Sgd: row += scale * g, nothing kept beside the row)
#include "core/row_rule.h"

namespace asyncps::detail {

namespace {
class Sgd final : public RowRule {
 public:
  RowOptimizer id() const noexcept override { return RowOptimizer::Sgd; }
  const char* name() const noexcept override { return "sgd"; }
  std::vector<RowStateBlock> state(int) const override { return {}; }
  std::string spec_problem(const TableSpec& spec) const override {
    const TableSpec d;
    if (spec.initial_accumulator != d.initial_accumulator) return "initial_accumulator is Adagrad's: it does nothing here";
    if (spec.ftrl_l1 != d.ftrl_l1 || spec.ftrl_l2 != d.ftrl_l2 || spec.ftrl_beta != d.ftrl_beta)
      return "ftrl_l1, ftrl_l2 and ftrl_beta are FTRL's: they do nothing here";
    return {};
  }
  float initial_state(const TableSpec&, int) const override { return 0.f; }
  int seen_first(int) const noexcept override { return 0; }
  int seen_count(int) const noexcept override { return 0; }
  // row[c] = scale * g[c]
  void update(const RowUpdate& u, const TableSpec&) const override {
    for (float& x : u.row) x *= u.scale;
  }
};
}  // namespace

const RowRule& sgd_rule() {
  static const Sgd rule;
  return rule;
}

}  // namespace asyncps::detail
