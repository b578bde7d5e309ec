// defines: ParamLayout, row_optimizer_fields
#include "asyncps/param_layout.h"

#include <cmath>
#include <cstring>

#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "core/row_rule.h"

namespace asyncps {

std::vector<std::string> row_optimizer_fields(RowOptimizer optimizer) {
  std::vector<std::string> names;
  if (const detail::RowRule* rule = detail::find_row_rule(optimizer))
    for (const detail::SpecField& f : rule->fields()) names.emplace_back(f.name);
  return names;
}

int TableInfo::stride() const noexcept { return spec.dim + state_width(); }
std::vector<RowStateBlock> TableInfo::state_blocks() const { return detail::row_rule(spec.optimizer).state(spec.dim); }
// (add_table refused an optimizer without a rule: a TableInfo of a layout has one)
int TableInfo::state_width() const noexcept {
  const detail::RowRule* rule = detail::find_row_rule(spec.optimizer);
  return rule ? detail::state_width(*rule, spec.dim) : 0;
}

std::size_t ParamLayout::add(const std::string& name, const std::vector<std::int64_t>& shape) {
  if (const std::string problem = limits::tensor_name_problem(name); !problem.empty())
    throw ConfigError("ParamLayout::add: tensor name " + limits::shown_name(name) + " " + problem);
  if (by_name_.count(name)) throw ConfigError("ParamLayout::add: tensor '" + name + "' added twice");
  for (const auto& t : tables_)
    if (t.name == name) throw ConfigError("ParamLayout::add: '" + name + "' is already an embedding table's name");
  if (tensors_.size() >= limits::kMaxTensors)
    throw ConfigError("ParamLayout::add: more than " + std::to_string(limits::kMaxTensors) + " tensors");
  if (shape.size() > limits::kMaxTensorRank)
    throw ConfigError("ParamLayout::add: tensor '" + name + "' has " + std::to_string(shape.size()) +
                      " dimensions (at most " + std::to_string(limits::kMaxTensorRank) + ")");
  // n = product of the dimensions, checked at every factor against what the arena may still take
  const std::uint64_t room = limits::kMaxArenaFloats - size_;
  std::uint64_t n = 1;
  for (auto d : shape) {
    if (d <= 0)
      throw ConfigError("ParamLayout::add: tensor '" + name + "' has a non-positive dimension (" + std::to_string(d) + ")");
    if (static_cast<std::uint64_t>(d) > room / n)
      throw ConfigError("ParamLayout::add: tensor '" + name + "' makes the arena larger than " +
                        std::to_string(limits::kMaxArenaFloats) + " floats");
    n *= static_cast<std::uint64_t>(d);
  }
  by_name_.emplace(name, tensors_.size());
  tensors_.push_back(TensorInfo{name, shape, size_, static_cast<std::size_t>(n)});
  size_ += static_cast<std::size_t>(n);
  return tensors_.back().offset;
}

void ParamLayout::add_table(const std::string& name, const TableSpec& spec) {
  const std::string where = "ParamLayout::add_table: ";
  if (const std::string problem = limits::tensor_name_problem(name); !problem.empty())
    throw ConfigError(where + "table name " + limits::shown_name(name) + " " + problem);
  if (by_name_.count(name)) throw ConfigError(where + "'" + name + "' is already a tensor's name");
  for (const auto& t : tables_)
    if (t.name == name) throw ConfigError(where + "table '" + name + "' added twice");
  if (tables_.size() >= limits::kMaxTables)
    throw ConfigError(where + "more than " + std::to_string(limits::kMaxTables) + " tables");
  if (spec.rows < 1 || spec.rows > limits::kMaxTableRows)
    throw ConfigError(where + "table '" + name + "': rows must be in [1, 2^36], got " + std::to_string(spec.rows));
  if (spec.dim < 1 || spec.dim > limits::kMaxTableDim)
    throw ConfigError(where + "table '" + name + "': dim must be in [1, " + std::to_string(limits::kMaxTableDim) +
                      "], got " + std::to_string(spec.dim));
  if (!std::isfinite(spec.init_scale) || spec.init_scale < 0)
    throw ConfigError(where + "table '" + name + "': init_scale must be finite and >= 0");
  const detail::RowRule* rule = detail::find_row_rule(spec.optimizer);
  if (!rule) throw ConfigError(where + "table '" + name + "': unknown RowOptimizer");
  if (const std::string problem = detail::spec_problem(*rule, spec); !problem.empty())
    throw ConfigError(where + "table '" + name + "': " + problem);
  TableInfo info{name, spec};
  info.group = tables_.size();
  info.group_stride = info.stride();
  if (!spec.share_rows_with.empty()) {
    std::size_t with = tables_.size();
    for (std::size_t i = 0; i < tables_.size(); ++i)
      if (tables_[i].name == spec.share_rows_with) with = i;
    if (with == tables_.size())
      throw ConfigError(where + "table '" + name + "': share_rows_with names no earlier table (" +
                        limits::shown_name(spec.share_rows_with) + ")");
    if (tables_[with].spec.rows != spec.rows)
      throw ConfigError(where + "table '" + name + "' has " + std::to_string(spec.rows) + " rows, but '" +
                        spec.share_rows_with + "', whose rows it shares, has " + std::to_string(tables_[with].spec.rows));
    info.group = tables_[with].group;
    info.group_offset = tables_[info.group].group_stride;
    const int pitch = info.group_offset + info.stride();  // (<= kMaxTables x 3 kMaxTableDim: an int)
    for (auto& t : tables_)
      if (t.group == info.group) t.group_stride = pitch;
    info.group_stride = pitch;
  }
  tables_.push_back(std::move(info));
}

const TableInfo& ParamLayout::table(const std::string& name) const { return tables_[table_index(name)]; }

std::size_t ParamLayout::table_index(const std::string& name) const {
  for (std::size_t i = 0; i < tables_.size(); ++i)
    if (tables_[i].name == name) return i;
  throw ConfigError("ParamLayout: no embedding table named " + limits::shown_name(name));
}

const TensorInfo& ParamLayout::tensor(const std::string& name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) throw ConfigError("ParamLayout: no tensor named " + limits::shown_name(name));
  return tensors_[it->second];
}

std::span<float> ParamLayout::view(std::span<float> arena, const std::string& name) const {
  const auto& t = tensor(name);
  if (arena.size() < size_) throw ConfigError("ParamLayout::view: arena smaller than the layout");
  return arena.subspan(t.offset, t.size);
}

std::span<const float> ParamLayout::view(std::span<const float> arena, const std::string& name) const {
  const auto& t = tensor(name);
  if (arena.size() < size_) throw ConfigError("ParamLayout::view: arena smaller than the layout");
  return arena.subspan(t.offset, t.size);
}

std::uint64_t ParamLayout::hash() const noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  };
  for (const auto& t : tensors_) {
    mix(t.name.data(), t.name.size());
    const unsigned char sep = 0;
    mix(&sep, 1);
    for (std::int64_t d : t.shape) {
      // little-endian bytes whatever the host, so the hash is the same everywhere
      unsigned char le[8];
      for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(d) >> (8 * i));
      mix(le, 8);
    }
    mix(&sep, 1);
  }
  // (a layout without tables hashes as it always has: checkpoints record the hash)
  auto mix_u64 = [&](std::uint64_t v) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
    mix(le, 8);
  };
  for (const auto& t : tables_) {
    const unsigned char marker = 0x7c;  // '|': a table follows
    mix(&marker, 1);
    mix(t.name.data(), t.name.size());
    mix_u64(t.spec.rows);
    mix_u64(static_cast<std::uint64_t>(t.spec.dim));
    mix_u64(static_cast<std::uint64_t>(t.spec.optimizer));
    mix_u64(t.spec.seed);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &t.spec.init_scale, 4);
    mix_u64(bits);
    std::memcpy(&bits, &t.spec.initial_accumulator, 4);
    mix_u64(bits);
    for (float f : detail::row_rule(t.spec.optimizer).hashed_fields(t.spec)) {  // (none: hashed as before)
      std::memcpy(&bits, &f, 4);
      mix_u64(bits);
    }
    if (!t.spec.share_rows_with.empty()) {  // (a table stored alone hashes as it always has)
      const unsigned char with = 0x26;  // '&'
      mix(&with, 1);
      mix(t.spec.share_rows_with.data(), t.spec.share_rows_with.size());
    }
  }
  return h;
}

}  // namespace asyncps
