// defines: Roles::make, ShardPlan
#include "asyncps/roles.h"

#include <string>

#include "asyncps/error.h"

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

}  // namespace asyncps
