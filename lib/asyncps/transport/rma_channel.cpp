// defines: RmaChannel (the windows, their epochs, chunking and completion)
#include "transport/rma_channel.h"

#include <utility>


namespace asyncps::detail {

RmaChannel::RmaChannel(const ChannelConfig& config)
    : cfg_(config),
      win_(open_windows(config)),
      chunk_floats_(std::max<std::size_t>(1, config.chunk_bytes / sizeof(float))),
      atomic_pull_(config.atomic_pull) {}

void RmaChannel::configure(const Completion& completion, RequestWaiter waiter, WaitWatch* watch,
                           double flush_timeout, std::string flush_what, std::string waiting_for) {
  completion_ = &completion;
  waiter_ = std::move(waiter);
  watch_ = watch;
  flush_timeout_ = flush_timeout;
  flush_what_ = std::move(flush_what);
  waiter_.watch(watch, std::move(waiting_for));
}

MPI_Win RmaChannel::win_of(Table table) const noexcept {
  switch (table) {
    case Table::Params: return win_.params.get();
    case Table::Accum: return win_.accum.get();
    case Table::Shadow: return win_.shadow.get();
    case Table::Control: return win_.control.get();
    case Table::Rows: return win_.rows.get();
  }
  return MPI_WIN_NULL;
}

// What the batch must flush, and what the channel must flush before a later read or the end:
// writes always (complete at the targets only after a flush); every operation of a strategy
// that only a flush completes.
void RmaChannel::issued(Table table, RmaBatch& batch, bool write) noexcept {
  const auto t = static_cast<unsigned>(table);
  const bool by_flush = batch.how->completes_by_flush();
  if (write) writes_ |= t;
  if (by_flush) unflushed_ |= t;
  if (write || by_flush) batch.touched |= t;
}

void RmaChannel::read(Table table, float* dst, RmaBatch& batch) {
  const MPI_Win w = win_of(table);
  const bool atomic = table != Table::Params || atomic_pull_;
  for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    batch.how->read(dst + off, n, MPI_FLOAT, target, disp, atomic, w, batch);
  });
  issued(table, batch, /*write=*/false);  // (a request read completes by its data)
}

void RmaChannel::add(Table table, const float* src, RmaBatch& batch) {
  const MPI_Win w = win_of(table);
  for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    batch.how->accumulate(src + off, n, MPI_FLOAT, target, disp, MPI_SUM, w, batch);
  });
  issued(table, batch, /*write=*/true);
}

void RmaChannel::replace(Table table, const float* src, RmaBatch& batch) {
  const MPI_Win w = win_of(table);
  for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    batch.how->accumulate(src + off, n, MPI_FLOAT, target, disp, MPI_REPLACE, w, batch);
  });
  issued(table, batch, /*write=*/true);
}

void RmaChannel::read_run(Table table, int target, MPI_Aint disp, float* dst, std::size_t n, RmaBatch& batch) {
  const MPI_Win w = win_of(table);
  for (std::size_t done = 0; done < n; done += chunk_floats_) {
    const int k = static_cast<int>(std::min(chunk_floats_, n - done));
    batch.how->read(dst + done, k, MPI_FLOAT, target, disp + static_cast<MPI_Aint>(done), /*atomic=*/true, w, batch);
  }
  issued(table, batch, /*write=*/false);
}

void RmaChannel::add_run(Table table, int target, MPI_Aint disp, const float* src, std::size_t n, RmaBatch& batch) {
  const MPI_Win w = win_of(table);
  for (std::size_t done = 0; done < n; done += chunk_floats_) {
    const int k = static_cast<int>(std::min(chunk_floats_, n - done));
    batch.how->accumulate(src + done, k, MPI_FLOAT, target, disp + static_cast<MPI_Aint>(done), MPI_SUM, w, batch);
  }
  issued(table, batch, /*write=*/true);
}

void RmaChannel::fetch_slots(int slot, const std::int64_t* add, std::int64_t* result, int count, MPI_Op op,
                             RmaBatch& batch) {
  batch.how->fetch(add, result, count, MPI_INT64_T, kControlRank, slot, op, win_.control.get(), batch);
  issued(Table::Control, batch, /*write=*/false);  // (a fetch's result completes it, or the flush)
}

void RmaChannel::fetch_add_first(int slot, const std::int64_t* add, std::int64_t* result, int count,
                                 RmaBatch& batch) {
  batch.how->fetch_add_first(add, result, count, kControlRank, slot, win_.control.get(), batch);
  issued(Table::Control, batch, /*write=*/false);
}

void RmaChannel::add_slots(int slot, const std::int64_t* add, int count, MPI_Datatype type, RmaBatch& batch) {
  batch.how->accumulate(add, count, type, kControlRank, slot, MPI_SUM, win_.control.get(), batch);
  issued(Table::Control, batch, /*write=*/true);
}

void RmaChannel::fetch_now(int slot, const std::int64_t* add, std::int64_t* result, int count, MPI_Op op,
                           MPI_Datatype type) {
  beat();
  MPI_Request r;
  ASYNCPS_MPI_CHECK(MPI_Rget_accumulate(add, op == MPI_NO_OP ? 0 : count, type, result, count, type,
                                        kControlRank, slot, count, type, op, win_.control.get(), &r));
  waiter_.wait(r);
}

void RmaChannel::wait(std::vector<MPI_Request>& requests) {
  beat();  // every operation that enters MPI beats (flush, fetch_now, waits): alive
  waiter_.wait_all(requests);
}

// A flush of a table completes every operation issued on it before: a batch needs one only
// where no flush has come since its operations (their bit is still set).
void RmaChannel::flush_needed(unsigned tables) {
  for (unsigned t = 1; t <= static_cast<unsigned>(Table::Rows); t <<= 1)
    if (tables & (writes_ | unflushed_) & t) flush(static_cast<Table>(t));
}

void RmaChannel::complete_local(RmaBatch& batch) {
  if (!batch.requests.empty()) wait(batch.requests);
  if (batch.how->completes_by_flush()) {  // only a flush completes them, locally or not
    flush_needed(batch.touched);
    batch.touched = 0;
  }
}

void RmaChannel::complete(RmaBatch& batch) {
  complete_local(batch);
  flush_needed(batch.touched);
  batch.touched = 0;
}

void RmaChannel::flush(Table table) {
  beat();
  // A flush no heartbeat covers (it blocks inside MPI): watched, so a server that stopped ends the job.
  const DeadlineScope watch(cfg_.deadline, flush_timeout_, flush_what_);
  const MPI_Win w = win_of(table);
  if (table == Table::Control) {
    ASYNCPS_MPI_CHECK(MPI_Win_flush(kControlRank, w));
  } else if (table == Table::Rows) {
    if (w != MPI_WIN_NULL)
      for (int s = 0; s < cfg_.roles->num_servers; ++s)
        if (cfg_.row_plan->server_floats(s) > 0) ASYNCPS_MPI_CHECK(MPI_Win_flush(s, w));
  } else {
    for (const Shard& sh : cfg_.plan->shards())
      if (sh.size > 0) ASYNCPS_MPI_CHECK(MPI_Win_flush(sh.server, w));
  }
  writes_ &= ~static_cast<unsigned>(table);
  unflushed_ &= ~static_cast<unsigned>(table);
}

void RmaChannel::flush_pending() { flush_needed(~0u); }

}  // namespace asyncps::detail
