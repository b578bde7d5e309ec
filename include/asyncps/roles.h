// defines: asyncps::Roles, asyncps::Shard, asyncps::ShardPlan
// Who does what. Ranks [0, S) are servers, the rest workers; the first worker is the chief
// (it logs, evaluates and keeps the EMA, the seed's is_chief). The arena is cut into S
// contiguous shards balanced by bytes: a tensor larger than one share spans several servers,
// so no server is hot (never round-robin by tensor).
#pragma once
#include <cstddef>
#include <vector>

namespace asyncps {

struct Roles {
  int rank = 0;
  int size = 0;         // ranks in the job
  int num_servers = 1;  // S

  // Throws ConfigError unless 1 <= S < size (at least one server and one worker).
  static Roles make(int rank, int size, int num_servers);

  bool is_server() const noexcept { return rank < num_servers; }
  bool is_worker() const noexcept { return rank >= num_servers; }
  int num_workers() const noexcept { return size - num_servers; }
  int worker_index() const noexcept { return rank - num_servers; }  // valid on workers
  bool is_chief() const noexcept { return rank == num_servers; }
  int worker_rank(int worker_index) const noexcept { return num_servers + worker_index; }
};

struct Shard {
  int server = 0;          // rank that holds it
  std::size_t offset = 0;  // first float of the arena it holds
  std::size_t size = 0;    // floats
};

class ShardPlan {
 public:
  // Splits `arena_floats` into `num_servers` contiguous shards whose sizes differ by at most
  // one float; with more servers than floats some shards are empty.
  ShardPlan(std::size_t arena_floats, int num_servers);

  const std::vector<Shard>& shards() const noexcept { return shards_; }
  const Shard& shard(int server) const { return shards_.at(static_cast<std::size_t>(server)); }
  std::size_t arena_floats() const noexcept { return arena_; }
  int server_of(std::size_t element) const;  // which server holds element i of the arena

 private:
  std::size_t arena_;
  std::vector<Shard> shards_;
};

}  // namespace asyncps
