// defines: ftrl_rule (RowOptimizer::Ftrl: FTRL-Proximal, per coordinate)
// McMahan et al., "Ad Click Prediction: a View from the Trenches", KDD 2013, Algorithm 1, with
// alpha = -scale. Beside its dim weights w a row keeps z (dim) and n (dim), which start at 0:
//   sigma = (sqrt(n + g^2) - sqrt(n)) / alpha
//   z    += g - sigma * w
//   n    += g^2
//   w     = 0 where |z| <= l1, else -(z - sign(z) * l1) / ((beta + sqrt(n)) / alpha + l2)
// The servers sum what workers add, so a worker sends the change of all three (w's too, from the
// w, z, n it last saw): with one worker the stored w is the closed form exactly; with several it
// is the sum of their changes, as every update here is (Hogwild). l1 > 0 makes weights exactly 0.
#include "core/row_rule.h"

#include <cmath>

namespace asyncps::detail {

namespace {
bool finite_nonneg(float x) { return std::isfinite(x) && x >= 0; }

class Ftrl final : public RowRule {
 public:
  RowOptimizer id() const noexcept override { return RowOptimizer::Ftrl; }
  const char* name() const noexcept override { return "ftrl"; }
  const char* label() const noexcept override { return "FTRL"; }
  std::span<const SpecField> fields() const noexcept override {
    static constexpr SpecField kFields[] = {
        {"ftrl_l1", [](const TableSpec& s) { return s.ftrl_l1 == TableSpec{}.ftrl_l1; }},
        {"ftrl_l2", [](const TableSpec& s) { return s.ftrl_l2 == TableSpec{}.ftrl_l2; }},
        {"ftrl_beta", [](const TableSpec& s) { return s.ftrl_beta == TableSpec{}.ftrl_beta; }}};
    return kFields;
  }
  std::vector<RowStateBlock> state(int dim) const override { return {{"ftrl_z", dim, true}, {"ftrl_n", dim, true}}; }
  std::string spec_problem(const TableSpec& spec) const override {
    if (!finite_nonneg(spec.ftrl_l1)) return "FTRL's ftrl_l1 must be finite and >= 0";
    if (!finite_nonneg(spec.ftrl_l2)) return "FTRL's ftrl_l2 must be finite and >= 0";
    if (!(std::isfinite(spec.ftrl_beta) && spec.ftrl_beta > 0)) return "FTRL's ftrl_beta must be finite and > 0";
    return {};
  }
  float initial_state(const TableSpec&, int) const override { return 0.f; }
  int seen_first(int) const noexcept override { return 0; }  // w, z and n
  int seen_count(int dim) const noexcept override { return 3 * dim; }
  std::string scale_problem(float scale) const override {
    return scale > 0 ? "FTRL's learning rate is -scale: scale must be <= 0" : "";
  }
  // row (3 x dim floats) = [w' - w ..., z' - z ..., n' - n ...]; scale 0 changes nothing
  void update(const RowUpdate& u, const TableSpec& spec) const override {
    const std::size_t d = u.row.size() / 3;
    const double alpha = -static_cast<double>(u.scale);
    if (alpha == 0) {
      for (float& x : u.row) x = 0.f;
      return;
    }
    const double l1 = spec.ftrl_l1, l2 = spec.ftrl_l2, beta = spec.ftrl_beta;
    for (std::size_t c = 0; c < d; ++c) {
      const double g = u.row[c], w = u.seen[c], z = u.seen[d + c], n = u.seen[2 * d + c];
      const double n1 = n + g * g;
      const double sigma = (std::sqrt(n1) - std::sqrt(n)) / alpha;
      const double z1 = z + g - sigma * w;
      const double w1 = std::abs(z1) <= l1 ? 0.0 : -(z1 - std::copysign(l1, z1)) / ((beta + std::sqrt(n1)) / alpha + l2);
      u.row[c] = static_cast<float>(w1 - w);
      u.row[d + c] = static_cast<float>(z1 - z);
      u.row[2 * d + c] = static_cast<float>(g * g);
    }
  }
  std::vector<float> hashed_fields(const TableSpec& spec) const override {
    return {spec.ftrl_l1, spec.ftrl_l2, spec.ftrl_beta};
  }
};
}  // namespace

const RowRule& ftrl_rule() {
  static const Ftrl rule;
  return rule;
}

}  // namespace asyncps::detail
