// defines: asyncps::detail::RmaChannel, Table
// One rank's one-sided access to the session's windows. The channel owns the windows and this
// rank's passive-target epochs on them (one MPI_Win_lock_all each, for the session's life), cuts
// every arena transfer into pieces (one per shard, large shards cut into Options::chunk_bytes:
// pt2pt slows sharply on huge messages), and hands each piece to its batch's completion strategy
// (transport/completion.h: flush- or request-based), which issues it in its form. The step's hot
// path takes the strategy the session chose (batch()); blocking calls and tickets pick theirs
// (RmaBatch::flushed(), RmaBatch::requests_batch()).
//
// The channel tracks which windows hold writes not yet complete at their targets, and which hold
// operations that only a flush completes, so that a flush happens once, where a batch, a later
// read or the end of the job needs it (pending(), flush()).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "transport/channel_config.h"
#include "transport/completion.h"
#include "transport/request_waiter.h"
#include "transport/session_windows.h"

namespace asyncps::detail {

// The windows the channel reaches: the arena and its shard-sized companions, the control block
// on rank 0, and the embedding tables' rows.
enum class Table : unsigned { Params = 1, Accum = 2, Shadow = 4, Control = 8, Rows = 16 };

class RmaChannel {
 public:
  RmaChannel() = default;
  // Collective over config.comm: creates the windows (same order on every rank) and opens the
  // epochs. Flush-based until configure() says otherwise.
  explicit RmaChannel(const ChannelConfig& config);
  RmaChannel(RmaChannel&&) noexcept = default;
  RmaChannel& operator=(RmaChannel&&) noexcept = default;

  // The completion strategy of the step's path (batch()), the waiter for request-based waits,
  // and the watch every operation beats and every wait reports to (null: none). A flush that blocks for the targets is
  // watched for `flush_timeout` seconds (0: not), with `flush_what` as the stall's message.
  void configure(const Completion& completion, RequestWaiter waiter, WaitWatch* watch, double flush_timeout,
                 std::string flush_what, std::string waiting_for);
  const Completion& completion() const noexcept { return *completion_; }
  RmaBatch batch() const { return RmaBatch{completion_, {}, 0}; }

  // ---- the arena tables (Params, Accum, Shadow), one operation per piece ----------------------
  // dst = table: element-wise atomic (MPI_Get_accumulate(MPI_NO_OP), ordered after this rank's
  // accumulates), or for Params under PullMethod::Get plain MPI_Get.
  void read(Table table, float* dst, RmaBatch& batch);
  // table += src (MPI_SUM), or table = src (MPI_REPLACE, each element whole). `src` stays
  // untouched until the batch completes locally.
  void add(Table table, const float* src, RmaBatch& batch);
  void replace(Table table, const float* src, RmaBatch& batch);
  // table += the pieces `stage(buffer, arena_offset, count)` writes into `buffer` (one piece
  // long at most), one piece at a time: each accumulated and completed locally before the buffer
  // is reused (a scaling pass that stays in cache), and all complete at the targets on return.
  template <class Stage>
  void add_staged(Table table, float* buffer, Stage stage);

  // ---- runs of floats on one target (the embedding tables' rows) -------------------------------
  // dst[0..n) = table at (target, disp), element-wise atomic (MPI_Get_accumulate(MPI_NO_OP):
  // ordered after this rank's accumulates there); cut into chunk_floats() pieces.
  void read_run(Table table, int target, MPI_Aint disp, float* dst, std::size_t n, RmaBatch& batch);
  // table at (target, disp) += src[0..n) (MPI_SUM); src untouched until the batch completes locally.
  void add_run(Table table, int target, MPI_Aint disp, const float* src, std::size_t n, RmaBatch& batch);

  // ---- the control block on rank 0 (int64 slots; see ControlBlock) -----------------------------
  // result[0..count) = slots before the operation; slots (op)= add (MPI_SUM, or MPI_NO_OP: a read).
  void fetch_slots(int slot, const std::int64_t* add, std::int64_t* result, int count, MPI_Op op,
                   RmaBatch& batch);
  // result[0..count) = slots before; the first += add[0] (add[1..count) are 0): the step claim.
  void fetch_add_first(int slot, const std::int64_t* add, std::int64_t* result, int count, RmaBatch& batch);
  // slots += add, nothing fetched (counts as a write: complete at the target after a flush).
  void add_slots(int slot, const std::int64_t* add, int count, MPI_Datatype type, RmaBatch& batch);
  // One read-modify-write, complete on return (request-based: the data coming back completes it).
  void fetch_now(int slot, const std::int64_t* add, std::int64_t* result, int count, MPI_Op op,
                 MPI_Datatype type = MPI_INT64_T);

  // ---- completion -------------------------------------------------------------------------------
  // Everything in `batch` is complete at its targets.
  void complete(RmaBatch& batch);
  // Its buffers are free again (requests waited for; a flushed batch is flushed). Writes by
  // request are complete at the targets only after a later flush (pending()).
  void complete_local(RmaBatch& batch);
  // Whether `table` holds writes of this rank not known complete at the targets.
  bool pending(Table table) const noexcept { return (writes_ & static_cast<unsigned>(table)) != 0; }
  // Completes this rank's operations on `table` at every target (MPI_Win_flush per server).
  void flush(Table table);
  void flush_pending();  // every table with writes not known complete, or plain operations not flushed

  // Calls op(target, target_disp, arena_offset, count) for each piece of the arena.
  template <class Op>
  void for_each_piece(Op op) const;

  const ChannelConfig& config() const noexcept { return cfg_; }
  // The windows' memory (servers read and write their own shard; server 0 its control block).
  SessionWindows& windows() noexcept { return win_; }
  const SessionWindows& windows() const noexcept { return win_; }
  std::size_t chunk_floats() const noexcept { return chunk_floats_; }
  void end_epochs() { win_.end_epochs(); }  // early (a worker's finish), throwing on error
  void close() { win_.close(); }            // collective, at the job's end only

 private:
  MPI_Win win_of(Table table) const noexcept;
  void beat() {
    if (watch_) watch_->beat();
  }
  void wait(std::vector<MPI_Request>& requests);
  ChannelConfig cfg_;
  SessionWindows win_;
  std::size_t chunk_floats_ = 1;
  bool atomic_pull_ = true;
  const Completion* completion_ = &flush_completion();
  RequestWaiter waiter_;
  WaitWatch* watch_ = nullptr;
  double flush_timeout_ = 0;
  std::string flush_what_;
  void issued(Table table, RmaBatch& batch, bool write) noexcept;
  void flush_needed(unsigned tables);  // flushes those of `tables` an earlier flush has not covered
  unsigned writes_ = 0;     // tables with writes not known complete at the targets
  unsigned unflushed_ = 0;  // tables with plain (flush-completed) operations not flushed since
};

template <class Op>
void RmaChannel::for_each_piece(Op op) const {
  for (const Shard& sh : cfg_.plan->shards()) {
    for (std::size_t done = 0; done < sh.size; done += chunk_floats_) {
      const std::size_t n = std::min(chunk_floats_, sh.size - done);
      op(sh.server, static_cast<MPI_Aint>(done), sh.offset + done, static_cast<int>(n));
    }
  }
}

template <class Stage>
void RmaChannel::add_staged(Table table, float* buffer, Stage stage) {
  const MPI_Win w = win_of(table);  // (the closing flush beats)
  writes_ |= static_cast<unsigned>(table);  // (a stage that throws leaves the pieces before it to a later flush)
  unflushed_ |= static_cast<unsigned>(table);
  for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    stage(buffer, off, n);
    ASYNCPS_MPI_CHECK(MPI_Accumulate(buffer, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM, w));
    ASYNCPS_MPI_CHECK(MPI_Win_flush_local(target, w));  // the buffer may be reused now
  });
  flush(table);
}

}  // namespace asyncps::detail
