// defines: adagrad_rule (RowOptimizer::Adagrad, row-wise: one accumulator per row)
#include "core/row_rule.h"

#include <cmath>

namespace asyncps::detail {

namespace {
class Adagrad final : public RowRule {
 public:
  bool uses_eps() const noexcept override { return true; }
  RowOptimizer id() const noexcept override { return RowOptimizer::Adagrad; }
  const char* name() const noexcept override { return "adagrad"; }
  const char* label() const noexcept override { return "Adagrad"; }
  std::vector<RowStateBlock> state(int) const override { return {{"accumulator", 1}}; }
  std::span<const SpecField> fields() const noexcept override {
    static constexpr SpecField kFields[] = {
        {"initial_accumulator", [](const TableSpec& s) { return s.initial_accumulator == TableSpec{}.initial_accumulator; }}};
    return kFields;
  }
  std::string spec_problem(const TableSpec& spec) const override {
    if (!(std::isfinite(spec.initial_accumulator) && spec.initial_accumulator > 0))
      return "Adagrad's initial_accumulator must be finite and > 0";
    return {};
  }
  float initial_state(const TableSpec& spec, int) const override { return spec.initial_accumulator; }
  int seen_first(int dim) const noexcept override { return dim; }  // the accumulator
  int seen_count(int) const noexcept override { return 1; }
  // row (dim + 1 floats) = [scale * g / (sqrt(acc + mean(g^2)) + eps) ..., mean(g^2)]
  void update(const RowUpdate& u, const TableSpec&) const override {
    const std::size_t d = u.row.size() - 1;
    double g2 = 0;
    for (std::size_t c = 0; c < d; ++c) g2 += static_cast<double>(u.row[c]) * u.row[c];
    const double add = g2 / static_cast<double>(d);
    const double denom = std::sqrt(static_cast<double>(u.seen[0]) + add) + u.eps;
    for (std::size_t c = 0; c < d; ++c) u.row[c] = static_cast<float>(u.scale * u.row[c] / denom);
    u.row[d] = static_cast<float>(add);
  }
};
}  // namespace

const RowRule& adagrad_rule() {
  static const Adagrad rule;
  return rule;
}

}  // namespace asyncps::detail
