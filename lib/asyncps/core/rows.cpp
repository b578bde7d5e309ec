// defines: initial_row_value, init_server_rows
#include "core/rows.h"

#include "core/row_rule.h"

namespace asyncps::detail {

namespace {
std::uint64_t name_hash(const std::string& name) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}
}  // namespace

float initial_row_value(const TableInfo& table, std::uint64_t row, int col) noexcept {
  if (col >= table.spec.dim) return row_rule(table.spec.optimizer).initial_state(table.spec, col - table.spec.dim);
  const std::uint64_t x = mix64(table.spec.seed ^ mix64(name_hash(table.name) ^ mix64(row * 65537u + static_cast<std::uint64_t>(col))));
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
  return static_cast<float>(table.spec.init_scale * (2 * u - 1));
}

void init_server_rows(const ParamLayout& layout, const RowPlan& plan, int server, float* window) {
  for (std::size_t t = 0; t < layout.tables().size(); ++t) {
    const TableInfo& table = layout.tables()[t];
    const RowPlan::Part& part = plan.part(t, server);
    const int stride = table.stride();
    const auto pitch = static_cast<std::size_t>(plan.pitch(t));  // (a row group's tables interleave)
    float* out = window + part.offset;
    for (std::uint64_t i = 0; i < part.rows; ++i, out += pitch)
      for (int c = 0; c < stride; ++c) out[c] = initial_row_value(table, part.first_row + i, c);
  }
}

}  // namespace asyncps::detail
