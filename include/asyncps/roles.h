// defines: asyncps::Roles, asyncps::Shard, asyncps::ShardPlan
// Who does what. Ranks [0, S) are servers, the rest workers; the first worker is the chief
// (it logs, evaluates and keeps the EMA, the seed's is_chief). The arena is cut into S
// contiguous shards balanced by bytes: a tensor larger than one share spans several servers,
// so no server is hot (never round-robin by tensor). An embedding table's rows are cut the same
// way, into S contiguous ranges (keys are hashed into rows first, so hot keys spread evenly).
#pragma once
#include <cstddef>
#include <cstdint>
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

class ParamLayout;

// Where every embedding table's rows live: server s holds rows [first_row, first_row + rows) of
// each table, consecutive in its row window, one row every pitch() floats: a table stored alone
// row after row of TableInfo::stride() floats; the tables of a row group (TableSpec::
// share_rows_with) interleaved, row r of each side by side in a group row of
// TableInfo::group_stride floats.
class RowPlan {
 public:
  struct Part {
    std::uint64_t first_row = 0, rows = 0;
    std::size_t offset = 0;  // float offset of first_row's values in the server's row window
  };
  RowPlan() = default;
  RowPlan(const ParamLayout& layout, int num_servers);
  bool empty() const noexcept { return strides_.empty(); }  // no tables
  // Floats server `server` exposes for all tables.
  std::size_t server_floats(int server) const { return floats_.at(static_cast<std::size_t>(server)); }
  const Part& part(std::size_t table, int server) const;
  int server_of(std::size_t table, std::uint64_t row) const;
  // (server, float offset in that server's row window) of row `row` of table `table`.
  std::size_t offset_of(std::size_t table, int server, std::uint64_t row) const;
  int stride(std::size_t table) const { return strides_.at(table); }  // the table's floats per row
  int pitch(std::size_t table) const { return pitches_.at(table); }   // floats from one row to the next

 private:
  int servers_ = 0;
  std::vector<int> strides_, pitches_;
  std::vector<std::uint64_t> rows_;
  std::vector<std::vector<Part>> parts_;  // [table][server]
  std::vector<std::size_t> floats_;       // [server]
};

}  // namespace asyncps
