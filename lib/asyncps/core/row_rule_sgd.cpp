// defines: sgd_rule (RowOptimizer::Sgd: row += scale * g, nothing kept beside the row)
#include "core/row_rule.h"

namespace asyncps::detail {

namespace {
class Sgd final : public RowRule {
 public:
  RowOptimizer id() const noexcept override { return RowOptimizer::Sgd; }
  const char* name() const noexcept override { return "sgd"; }
  const char* label() const noexcept override { return "SGD"; }
  std::vector<RowStateBlock> state(int) const override { return {}; }
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
