// defines: asyncps::EmbeddingTable, asyncps::EmbeddingGroup, asyncps::RowPush, asyncps::TableStats,
//          asyncps::table_row, asyncps::table_initial_value
// A worker's handle on one embedding table of the layout (ParamLayout::add_table): rows x dim
// floats sharded across the servers by row, read and updated a few rows at a time by key, one-
// sided (the servers' CPUs are not on the data path where the transport does not need them).
//
//   layout.add_table("ads", {.rows = 1 << 22, .dim = 16, .optimizer = asyncps::RowOptimizer::Adagrad});
//   ... Session, and on the servers ParameterServer (which fills the rows) ...
//   asyncps::WorkerClient w(session);
//   asyncps::EmbeddingTable ads(w, "ads");
//   ads.pull_rows(keys, emb);                 // emb[i*16 .. i*16+16) = the row of keys[i]
//   ... forward, backward: demb, the gradient of each looked-up row ...
//   ads.push_rows(keys, demb, -lr);           // duplicates summed, then one update per row
//
// Keys are any uint64 ids, hashed into rows: row = mix64(key) mod rows (splitmix64's finaliser,
// row_of()). Distinct keys that land in one row share it. With n distinct keys in R rows, the
// expected share of keys that collide with another is 1 - (R/n)(1 - e^(-n/R)): about n/(2R)
// for n << R (1% of the keys at n = R/50).
//
// Sharding: server s holds a contiguous range of rows (RowPlan). Hashing first makes it even
// whatever the ids' skew. Transfers are contiguous runs of rows, one MPI operation per run and
// server (no derived datatypes); a run takes in gaps between wanted rows (read along, or added as
// zeros) of up to 4 KiB within one node and 1 KiB across nodes (Session::single_node()), about
// what an operation costs in bytes there. All on the
// session's channel: the same windows' epochs, completion strategy, heartbeats and stall watch
// as the dense arena.
//
// Updates are Hogwild, in every Options::mode: applied as they arrive, atomic per element
// (MPI_Accumulate), never lost. Row-wise Adagrad keeps one accumulator per row beside the row.
// push_rows takes the accumulator as this worker last read it (its last pull_rows of that row,
// or a read now), adds mean(g*g) over the row, steps by scale * g / (sqrt(acc) + eps), and adds
// both the step and mean(g*g) to the servers' copy in one accumulate. Two workers that update
// one row at once each add their own g*g exactly; each steps with an accumulator that lacks the
// other's (stale by the updates in flight, as the row itself is). FTRL-Proximal (RowOptimizer::
// Ftrl) keeps z and n per coordinate beside the row and works the same way: push_rows takes the
// row's w, z and n as this worker last read them, computes the new ones, and adds the three
// changes in one accumulate (with one worker the stored w is FTRL's closed form exactly).
//
// Tables whose keys are the same (a wide weight and a deep embedding of one id) can share rows:
// layout.add_table("deep", {..., .share_rows_with = "wide"}) stores row r of both side by side,
// and an EmbeddingGroup of them moves all their rows of a batch in one operation per run (half
// the operations of two tables, the same bytes). Each table keeps its own optimizer, accumulator,
// start and checkpointed rows. A call on one table of a group moves the whole group rows (the
// others' columns read along, or added as zeros).
//
// prefetch_rows(next_keys) reads the next batch's rows during this step; the next pull_rows of
// the same keys takes them (this worker's pushes since added), which pays where every operation
// needs the server (across hosts: docs/EMBEDDINGS.md "Prefetch").
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "asyncps/param_layout.h"
#include "asyncps/worker_client.h"

namespace asyncps {

namespace detail {
struct TableState;     // a worker's state for one table (lib/asyncps/worker/embedding_table.cpp)
struct RowGroupState;  // ... and for one row group (its buffers)
}

struct TableStats {
  std::uint64_t pulls = 0, pushes = 0;
  std::uint64_t keys_pulled = 0, keys_pushed = 0;  // as given (duplicates included)
  std::uint64_t rows_pulled = 0, rows_pushed = 0;  // distinct rows moved
  std::uint64_t runs = 0;                          // MPI operations' contiguous runs, pulls and pushes
  std::uint64_t bytes_pulled = 0, bytes_pushed = 0;
  std::uint64_t nonfinite = 0;                     // pushes refused for NaN or Inf
  std::uint64_t prefetched = 0;                    // pulls that took a prefetch_rows
  double pull_seconds = 0, push_seconds = 0;       // (a prefetch's issue counts with the pull that takes it)
};

// What push_rows() did.
struct RowPush {
  bool applied = false;    // the update left for the servers
  bool nonfinite = false;  // a gradient (or scale * gradient) held NaN or Inf: nothing was sent
  std::size_t rows = 0;    // distinct rows updated
  explicit operator bool() const noexcept { return applied; }
};

// The row `key` is hashed into in a table of `rows` rows: mix64(key) mod rows (EmbeddingTable::row_of).
// ConfigError where rows is 0.
std::uint64_t table_row(std::uint64_t key, std::uint64_t rows);
// Float `col` of row `row` as the servers start `table` (col >= dim: its optimizer's state), for code
// that keeps a copy of a table itself (a baseline, a reader of exported rows).
float table_initial_value(const TableInfo& table, std::uint64_t row, int col) noexcept;

class EmbeddingTable {
 public:
  // Not collective. Throws ConfigError if the layout has no table `name`, or on a server.
  // The worker must outlive it; several handles on one table share its state.
  EmbeddingTable(WorkerClient& worker, const std::string& name);

  const std::string& name() const noexcept;
  std::uint64_t rows() const noexcept;
  int dim() const noexcept;
  RowOptimizer optimizer() const noexcept;

  // The row a key is hashed into: mix64(key) mod rows, the same on every rank.
  std::uint64_t row_of(std::uint64_t key) const noexcept;

  // out[i*dim, (i+1)*dim) = the row of keys[i], each element read atomically; returns with the
  // data here. Reads come after this worker's earlier pushes to the same rows. out must hold
  // keys.size() * dim floats.
  void pull_rows(std::span<const std::uint64_t> keys, std::span<float> out);
  // Starts reading the rows of keys (the next batch's) and returns: the next pull_rows of the very
  // same keys takes them (waits for what is still on its way) instead of reading then, so the
  // read flies during this step's compute. What it returns is the rows as they were when the
  // prefetch was issued, plus this worker's own pushes since (added when it lands), so a worker
  // still reads its own updates; other workers' updates since are missed, one step staler. A pull
  // of other keys, another prefetch, or drain() drops it. One at a time per row group.
  void prefetch_rows(std::span<const std::uint64_t> keys);
  // grads[i*dim, (i+1)*dim) is the gradient of keys[i]'s row; the gradients of keys that share
  // a row are summed first, then each row is updated once (Sgd: row += scale * g; Adagrad and
  // Ftrl: see above, scale = -learning rate; Ftrl refuses scale > 0). A gradient holding NaN or Inf (or one that overflows when
  // scaled) sends nothing and counts in stats().nonfinite. Returns with the update in flight
  // (from its row group's own buffer: keys and grads are free at once), so that it flies during the
  // dense step; it lands before this worker's next pull_rows of those rows reads them and
  // before drain() returns. ConfigError for sizes that do not match, a non-finite scale, or after drain().
  RowPush push_rows(std::span<const std::uint64_t> keys, std::span<const float> grads, float scale);

  // Adagrad's epsilon in scale * g / (sqrt(acc) + eps) (default 1e-8; finite, >= 0).
  void set_epsilon(float eps);
  float epsilon() const noexcept;

  const TableStats& stats() const noexcept;

 private:
  WorkerClient* worker_;
  detail::TableState* state_;  // held by the worker's transport (a layer: it lives as long as the windows)
};

// Tables of one row group (TableSpec::share_rows_with), pulled and pushed together: each run of
// rows is one operation for all of them.
//
//   asyncps::EmbeddingGroup rows(w, {"wide", "deep"});
//   rows.pull_rows(keys, {wide_out, deep_out});            // as each table's pull_rows, at once
//   rows.push_rows(keys, {wide_grads, deep_grads}, -lr);   // as each table's push_rows, at once
class EmbeddingGroup {
 public:
  // Not collective. Throws ConfigError for no names, a name that is no table of the layout or is
  // given twice, tables that do not share rows, or on a server. The worker must outlive it; it
  // shares each table's state with that table's EmbeddingTable handles.
  EmbeddingGroup(WorkerClient& worker, const std::vector<std::string>& names);

  std::size_t size() const noexcept;       // tables, in the order named
  const std::string& name(std::size_t i) const;
  int dim(std::size_t i) const;
  std::uint64_t rows() const noexcept;     // (the same for all: add_table)

  // out[m] = table m's rows of keys, as EmbeddingTable::pull_rows (keys.size() * dim(m) floats each).
  void pull_rows(std::span<const std::uint64_t> keys, std::span<const std::span<float>> out);
  // As EmbeddingTable::prefetch_rows, for all the group's tables (a pull of the same keys by this
  // group or by one of its tables' handles takes it).
  void prefetch_rows(std::span<const std::uint64_t> keys);
  // grads[m] = table m's gradients of keys; each table updated as by its EmbeddingTable::push_rows
  // with this scale, all in one accumulate per run. A non-finite gradient in any table sends
  // nothing for any (counted in that table's stats().nonfinite and in this group's).
  RowPush push_rows(std::span<const std::uint64_t> keys, std::span<const std::span<const float>> grads, float scale);

  // This group's calls: their operations (runs), bytes and seconds. Each table's own stats()
  // count its pulls, pushes, keys and rows of these calls too.
  const TableStats& stats() const noexcept;

 private:
  WorkerClient* worker_;
  std::vector<detail::TableState*> members_;
  TableStats stats_;
};

}  // namespace asyncps
