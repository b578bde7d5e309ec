// defines: asyncps::detail::ControlBlock, JobProgress, SaveState
// The job's shared counters: an array of int64 in a window on server 0 (rank 0), reached only
// through the named operations below (the slots' places are this file's business alone):
//   global step    moved once per applied update (a claim: +1, fetching the value before it)
//   halt           non-zero: a worker asked the job to stop (every claim reads it)
//   done           workers that have drained
//   beat0          server 0's heartbeat, read by every claim beside the step: workers notice a
//                  stalled server 0
//   version        sync mode: rounds applied so far (workers wait for it to move)
//   arrivals       sync mode: updates added to the accumulation buffer in this round
//   save request   checkpoints: the step of the save server 0 asked for (0: none yet)
//   save acks      checkpoints: servers other than 0 that have written their shard of it
//   shadow valid   1 once the servers hold an EMA shadow (restored or stored by the chief)
//   save serial    checkpoints: +1 per save request (a step may be saved more than once)
//   save generation checkpoints: the requested save's generation (its shards' names)
//   committed      checkpoints: the step and generation (+ 1; 0: none) of the last index written
//   save failures  checkpoints: servers that acked the requested save without a shard
//   rows moved     +1 by a worker that pushed embedding rows (worker/rows_moved.h, rate-limited):
//                  server 0 saves again when it moved, even where the global step did not
//   clock[w]       worker w's clock: steps it has completed (SSP reads the minimum)
//   sum[s]         checkpoints: the checksum of server s's shard of the requested save (uint64)
//   beat[r]        rank r's heartbeat (r != 0): +1 about every beat interval while it is live;
//                  kFinished added once it has finished. Server 0 watches them.
// [step, halt, done, beat0] are adjacent: one operation reads them. Every operation on the block
// is MPI_SUM or MPI_NO_OP (the window promises same_op_no_op).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "transport/rma_channel.h"

namespace asyncps::detail {

// What one read of the job's progress returns (the four adjacent slots).
struct JobProgress {
  std::int64_t slots[4] = {0, 0, 0, 0};  // what MPI writes: the four slots in their order
  std::int64_t step() const noexcept { return slots[0]; }   // the global step (a claim: the value before its +1)
  std::int64_t halt() const noexcept { return slots[1]; }   // non-zero: a worker asked for a halt
  std::int64_t done() const noexcept { return slots[2]; }   // workers drained
  std::int64_t beat0() const noexcept { return slots[3]; }  // server 0's heartbeat
};

// A save request as the other servers read it.
struct SaveState {
  std::int64_t request = 0;  // the step server 0 asked to be saved
  std::int64_t acks = 0;
  bool shadow_valid = false;
  std::int64_t serial = 0;      // moves once per request
  std::int64_t generation = 0;  // of the requested save (shard_path's)
  std::int64_t committed_step = 0, committed_generation = -1;  // the last index written (-1: none yet)
};

class ControlBlock {
 public:
  static constexpr int kRank = kControlRank;           // the rank that holds it: server 0
  static constexpr std::int64_t kFinished = 1ll << 60;  // added to a heartbeat: that rank is done
  static constexpr std::int64_t kRetired = 1ll << 60;   // added to a drained worker's clock
  // added to the halt slot by a halt for SIGTERM (a plain halt adds 1): the halt says why
  static constexpr std::int64_t kTerminatedHalt = 1ll << 40;
  static std::size_t slots(int num_workers, int num_servers);

  ControlBlock() = default;
  // Over `channel`'s control window (which must outlive this).
  ControlBlock(RmaChannel& channel, int num_workers, int num_servers);

  // ---- workers: the step protocol ---------------------------------------------------------------
  // +1 on the global step, fetching [step before it, halt, done, beat0] into `out` (valid once
  // `batch` completes; `out` must stay alive until then), in the form of the batch's strategy
  // (transport/completion.h: one MPI_Rget_accumulate, or MPI_Fetch_and_op and a read).
  void claim(JobProgress& out, RmaBatch& batch);
  void give_back();                          // -1: a claimed step that was not used
  std::int64_t add_to_step(std::int64_t n);  // returns the step before
  std::int64_t global_step();
  JobProgress progress();                    // one atomic read of the four
  void request_halt(bool terminated = false);  // terminated: for SIGTERM (runtime/termination.h)
  // sync rounds
  std::int64_t version();
  std::int64_t arrive();  // +1 arrival; returns the arrivals before this one
  // The last arrival, once it has applied the round: arrivals back to 0, the step moves, then
  // the version (which releases the waiters).
  void close_round();
  // SSP clocks
  void tick_clock(int worker, RmaBatch& batch);  // +1, beside the push (a write of the batch)
  std::int64_t min_clock();                      // the slowest worker's clock
  // A drained worker: its clock jumps by kRetired (it holds nobody back), done += 1.
  void retire(int worker);
  // the EMA shadow
  bool shadow_valid();
  void mark_shadow_valid();

  // ---- any rank but 0: heartbeats ------------------------------------------------------------
  void post_beat(int rank, MPI_Request& request);  // +1 on beat[rank], non-blocking
  void mark_finished(int rank);                    // + kFinished on beat[rank], complete on return

  // ---- workers: embedding rows moved ----------------------------------------------------------
  void add_rows_moved();  // +1 on rows moved, complete at server 0 on return (a watched flush)

  // ---- servers other than 0: the save protocol (blocking, watched flushes) -------------------
  // One atomic read of the save slots. Server 0 completes a request's step and generation before
  // it moves the serial, and changes neither until every server has acked: a server that sees a
  // new serial reads again and takes the step and generation from that second read.
  SaveState read_save_state();
  void ack_save(int server, std::uint64_t checksum);  // sum[server] += checksum, then acks += 1
  void ack_failed_save();                             // failures += 1, then acks += 1

  // ---- server 0: its own memory (after MPI_Win_sync) -----------------------------------------
  void init_local(std::int64_t step, bool shadow_valid);  // every slot 0 but these
  std::int64_t local_step() const;
  std::int64_t local_halt() const;  // 0: none; >= kTerminatedHalt: some halt was for SIGTERM
  bool local_shadow_valid() const;
  std::int64_t local_save_acks() const;
  std::int64_t local_save_failures() const;
  std::int64_t local_rows_moved() const;
  std::uint64_t local_shard_sum(int server) const;
  const std::int64_t* local_beats() const;  // beat[r] for every rank r (r = 0 unused), synchronised
  void local_beat0();                       // server 0's own heartbeat: a local atomic add
  // server 0 publishes a save request and, once the index is written, resets the slots it used
  void set_save_request(std::int64_t step, std::int64_t generation);
  // once an index is written (before the next request): the other servers then remove their
  // shards of that step that it does not name (where they do not share server 0's directory)
  void set_committed(std::int64_t step, std::int64_t generation);
  void reset_save(int num_servers, std::int64_t failures);

 private:
  std::int64_t fetch_add(int slot, std::int64_t add);
  std::int64_t read(int slot);
  const Window& own_window() const;  // the control window, checked to hold the block here
  std::int64_t load_local(int slot) const;
  void add_and_flush(int slot, std::int64_t add, MPI_Datatype type);  // servers' blocking add
  int clock_slot(int worker) const noexcept;
  int sum_slot(int server) const noexcept;
  int beat_slot(int rank) const noexcept;
  RmaChannel* channel_ = nullptr;
  int workers_ = 0, servers_ = 0;
  // origins that outlive their operations, in writable memory beside the rest (an RDMA
  // component may register an origin buffer; read-only pages would refuse it)
  std::int64_t claim_add_[4] = {1, 0, 0, 0};
  std::int64_t one_ = 1;
  std::int64_t finished_ = kFinished;
};

}  // namespace asyncps::detail
