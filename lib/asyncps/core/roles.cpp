// defines: Roles::make, ShardPlan
#include "asyncps/roles.h"

#include <string>

#include "asyncps/error.h"
#include "asyncps/param_layout.h"

namespace asyncps {

Roles Roles::make(int rank, int size, int num_servers) {
  if (size < 2)
    throw ConfigError("needs at least 2 MPI ranks (1 server + 1 worker), got " + std::to_string(size) +
                      ": run it under mpirun -np 2 or more");
  if (num_servers < 1)
    throw ConfigError("Options::num_servers must be at least 1, got " + std::to_string(num_servers));
  if (num_servers >= size)
    throw ConfigError("Options::num_servers " + std::to_string(num_servers) + " leaves no worker among " + std::to_string(size) +
                      " ranks: use at most " + std::to_string(size - 1) + " servers or more ranks");
  return Roles{rank, size, num_servers};
}

ShardPlan::ShardPlan(std::size_t arena_floats, int num_servers) : arena_(arena_floats) {
  if (num_servers < 1) throw ConfigError("ShardPlan: needs at least one server");
  const auto s = static_cast<std::size_t>(num_servers);
  const std::size_t base = arena_floats / s, extra = arena_floats % s;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < s; ++i) {
    const std::size_t n = base + (i < extra ? 1 : 0);  // the first `extra` shards take one more float
    shards_.push_back(Shard{static_cast<int>(i), offset, n});
    offset += n;
  }
}

int ShardPlan::server_of(std::size_t element) const {
  if (element >= arena_) throw ConfigError("ShardPlan::server_of: element outside the arena");
  for (const auto& sh : shards_)
    if (element < sh.offset + sh.size) return sh.server;
  return shards_.back().server;  // unreachable
}

RowPlan::RowPlan(const ParamLayout& layout, int num_servers) : servers_(num_servers) {
  if (num_servers < 1) throw ConfigError("RowPlan: needs at least one server");
  const auto s = static_cast<std::uint64_t>(num_servers);
  floats_.assign(static_cast<std::size_t>(num_servers), 0);
  const auto& tables = layout.tables();
  for (std::size_t ti = 0; ti < tables.size(); ++ti) {
    const TableInfo& t = tables[ti];
    const std::uint64_t base = t.spec.rows / s, extra = t.spec.rows % s;
    std::vector<Part> parts;
    std::uint64_t first = 0;
    for (std::uint64_t i = 0; i < s; ++i) {
      const std::uint64_t n = base + (i < extra ? 1 : 0);  // the first `extra` servers take one more row
      if (t.group == ti) {  // a group's first table places the group's rows
        parts.push_back(Part{first, n, floats_[i]});
        floats_[i] += static_cast<std::size_t>(n) * static_cast<std::size_t>(t.group_stride);
      } else {  // the others sit beside it, in each of its rows (the same rows: add_table)
        parts.push_back(Part{first, n, parts_.at(t.group).at(i).offset + static_cast<std::size_t>(t.group_offset)});
      }
      first += n;
    }
    strides_.push_back(t.stride());
    pitches_.push_back(t.group_stride);
    rows_.push_back(t.spec.rows);
    parts_.push_back(std::move(parts));
  }
}

const RowPlan::Part& RowPlan::part(std::size_t table, int server) const {
  return parts_.at(table).at(static_cast<std::size_t>(server));
}

int RowPlan::server_of(std::size_t table, std::uint64_t row) const {
  const std::uint64_t rows = rows_.at(table);
  if (row >= rows) throw ConfigError("RowPlan::server_of: row outside the table");
  const auto s = static_cast<std::uint64_t>(servers_);
  const std::uint64_t base = rows / s, extra = rows % s;
  // the first `extra` servers hold base + 1 rows each, the others base
  const std::uint64_t big = extra * (base + 1);
  return static_cast<int>(row < big ? row / (base + 1) : extra + (row - big) / base);
}

std::size_t RowPlan::offset_of(std::size_t table, int server, std::uint64_t row) const {
  const Part& p = part(table, server);
  return p.offset + static_cast<std::size_t>(row - p.first_row) * static_cast<std::size_t>(pitches_[table]);
}

}  // namespace asyncps
