// defines: asyncps::detail::restore_checkpoint, find_candidates, load_range, ServerCheckpointer,
//          finish_job
// The checkpoint protocol between ranks (the file formats are in checkpoint_format.h).
//
// Restore (collective, in the ParameterServer and WorkerClient constructors): rank 0 lists the
// candidate indexes newest first (or --restart_from), skips and reports damaged ones, and
// broadcasts their bytes; every server tries to load its range from the first candidate; an
// all-reduce says whether every server could; if not, the next candidate is tried.
//
// Periodic save (servers, in serve()'s poll, no collective): server 0 writes its shard at step
// g and publishes kSaveRequest = g; every other server sees it on its next poll (one atomic read
// of rank 0's control block), writes its shard, adds the shard's checksum to its slot and acks;
// when all S-1 acks are in, server 0 writes the index (the commit point), resets the slots and
// prunes. A snapshot is Hogwild-consistent: each element whole, shards taken moments apart while
// workers keep pushing, exactly what a worker's pull could have returned.
//
// End (collective, after the shutdown barrier, in serve() and finish()): rank 0 broadcasts the
// final step and flags; unless the job took no step, servers write their shards of it under the
// final names (a periodic save of the same step may have missed updates still in flight),
// checksums are gathered on rank 0, which writes the index (atomically replacing a periodic one
// of the same step) and removes this run's indexes past the final step; after a broadcast that
// orders it behind the index, each server prunes its own files.
//
// Skips and warnings take any failure (std::exception: a damaged file, a file system error, an
// allocation that failed), never only the library's own errors: what would end one rank alone
// becomes a skip or a warning, and where ranks decide together they all still reach the verdict.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/job_facts.h"
#include "checkpoint/checkpoint_format.h"
#include "checkpoint/dir_lock.h"
#include "transport/control_block.h"
#include "transport/session_windows.h"

namespace asyncps::detail {

struct RestoredShard {
  bool found = false;
  std::int64_t step = 0;
  bool has_shadow = false;
  std::vector<float> params, shadow;  // this server's range (empty on workers)
  std::vector<float> rows;            // this server's rows of every table (its row window), if any
  std::string from;                   // the index file
};

// The restore's first step, on rank 0 (no MPI): the candidate indexes, newest first
// (restart_from alone when it is set, else those in dir when restore is on), each read with
// `read` (read_index_bytes when empty) and parsed. A candidate that fails in any way is skipped
// with one warning, except restart_from, whose failure is fatal; a candidate of another model is
// fatal; all candidates damaged is fatal. Never throws.
struct Candidates {
  std::vector<std::string> items;  // path, index bytes, path, index bytes, ... (newest first)
  std::string fatal;               // non-empty: the restore ends on every rank with this error
};
using IndexReader = std::function<std::string(const fs::path& file, bool follow_links)>;
Candidates find_candidates(const CheckpointOptions& co, const ParamLayout& layout, const IndexReader& read = {});

// The restore's second step, on each server (no MPI): its range `mine` of checkpoint `index`
// (whose shards are in `dir`, any number of servers wrote it) into `out`, and, where the layout
// has tables, its rows as `rows` places them for server `server` (RowPlan(layout, S) of this
// run; the checkpoint's shards hold RowPlan(layout, index.num_servers)'s: rows move between
// servers by row range). Each shard that overlaps is read once with `read` (read_shard when
// empty) and verified against the index. Returns why it could not ("" when it could: `out` then
// holds the range and the rows); never throws.
using ShardReader = std::function<ShardFile(const fs::path& file, const ParamLayout& layout)>;
std::string load_range(const Index& index, const fs::path& dir, const ParamLayout& layout, const Shard& mine,
                       const RowPlan& rows, int server, RestoredShard& out, const ShardReader& read = {});

// `lock` (server 0 only): takes the checkpoint directory's DirLock into it; a directory in use
// by another job ends the restore on every rank with its holder named. A run that does not
// restore the directory's newest checkpoint (restore off, or restart_from) first moves the
// files it could overwrite — those past its starting step — into <dir>/earlier-run-<UTC time>/.
RestoredShard restore_checkpoint(const JobFacts& job, DirLock* lock = nullptr);

class ServerCheckpointer {
 public:
  ServerCheckpointer(const JobFacts& job, SessionWindows& windows, ControlBlock& control, std::int64_t restored_step);
  void tick();  // from serve()'s poll loop
  std::int64_t last_indexed_step() const noexcept { return last_indexed_; }
  std::int64_t restored_step() const noexcept { return restored_; }
  // Writes this server's shard of `step`, generation `generation` (shard_path's), from window
  // memory (the final save under its own names); returns its checksum.
  std::uint64_t write_my_shard(std::int64_t step, std::int64_t generation, bool with_shadow, bool final_save = false);
  // Server 0: the generation of the next save of `step` (0 for its first; above any generation of
  // that step already on disk when the run restored it).
  std::int64_t take_generation(std::int64_t step);
  // Server 0, when the job must end early (a stalled worker): saves the current step now, or
  // finishes the save in flight, calling `progress` while other servers answer; gives up after
  // `seconds`. Returns the index written (the newest this run wrote), or empty.
  std::string save_now(const std::function<void()>& progress, double seconds);
  // The end of the job (finish_job): forget this session's saves past the final step (snapshots
  // taken while a claimed step was given back), remove the final step's shards its index no
  // longer names, and prune, keeping `extra_kept` more than keep.
  void after_final(std::int64_t final_step, std::int64_t generation, bool index_written, int extra_kept = 0);

 private:
  // Server 0: something to save since the last index: the global step moved, or a worker pushed
  // embedding rows (they move without it).
  bool changed_since_save() const;
  void request_save(std::int64_t step);
  void answer_request();
  void try_commit();
  void warn_not_saved(std::int64_t step, const std::string& why) const;
  void prune(int keep);  // prune_checkpoints of this session's files; a failure is a warning

  const JobFacts& job_;
  SessionWindows& win_;
  ControlBlock& control_;
  bool enabled_ = false;
  std::chrono::steady_clock::time_point last_save_;
  std::int64_t pending_ = -1;       // server 0: the step being saved, waiting for acks
  std::int64_t pending_gen_ = 0;    // ... its generation
  std::int64_t pending_rows_ = 0;   // ... the rows-moved count it holds
  std::int64_t rows_saved_ = 0;     // server 0: the rows-moved count of the last index written
  std::int64_t gen_step_ = -1, next_gen_ = 0;  // server 0: take_generation's state
  std::int64_t last_serial_ = 0;    // other servers: the last request they wrote a shard for
  std::int64_t last_indexed_ = -1;
  std::int64_t restored_ = 0;
  std::vector<std::int64_t> indexed_, sharded_;  // steps this session wrote (pruning touches only these)
  std::uint64_t my_sum_ = 0;
  int polls_since_check_ = 0;
};

struct FinalState {
  std::int64_t global_step = 0;
  bool halted = false;
  bool terminated = false;  // the halt was for SIGTERM (a rank received it)
  std::string saved;  // the index written at the end (rank 0), or empty
};

// Collective over the session after the shutdown barrier. `ckpt` is null on workers.
FinalState finish_job(const JobFacts& job, ControlBlock& control, ServerCheckpointer* ckpt);

}  // namespace asyncps::detail
