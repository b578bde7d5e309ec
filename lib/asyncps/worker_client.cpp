// defines: WorkerClient
#include "asyncps/worker_client.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/mpi_environment.h"
#include "check.h"
#include "checkpointer.h"
#include "control_block.h"
#include "liveness.h"
#include "progress.h"
#include "timeline.h"
#include "vector_ops.h"
#include "windows.h"

namespace asyncps {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

struct WorkerClient::Impl {
  Session& session;
  detail::SessionWindows win;  // and this worker's epochs on them
  std::size_t chunk_floats = 0;
  detail::FinalState final_state;
  bool finished = false;
  bool drained = false;
  WorkerStats stats;
  StalenessHistogram staleness, job_staleness;

  // begin_step/end_step state
  std::int64_t limit = 0;
  std::int64_t begin_global_step = 0;
  std::int64_t clock = 0;
  std::int64_t version_base = -1;  // sync: the version when this worker took its first step
  std::vector<float> sync_sum;     // sync: the round's summed update, fetched by the applier

  struct Pending {
    std::vector<MPI_Request> requests;
    int staging = -1;               // index into staging buffers, or -1
    MPI_Win win = MPI_WIN_NULL;     // the window to flush for remote completion (pushes only:
                                    // a completed get request already means the data is here)
  };
  std::unordered_map<Ticket, Pending> pending;
  Ticket next_ticket = 1;
  std::vector<std::vector<float>> staging;  // scale*grad copies: a pool, reused
  std::vector<int> free_staging;
  std::vector<float> push_buffer;           // blocking push's scale*grad, one piece at a time

  // Async/SSP steps (see docs/ARCHITECTURE.md "One step, one round trip"): begin_step claims
  // its step and pulls in one go (one MPI_Rget_accumulate(SUM, +1) on [step, halt, done] next
  // to the pulls: every request completes by data arriving, so no flush and one wait);
  // end_step's push leaves with requests and completes inside the next begin_step's wait.
  std::int64_t claim_add[4] = {1, 0, 0, 0};
  std::int64_t claim_now[4] = {0, 0, 0, 0};    // [step before mine, halt, done, server 0's heartbeat]
  std::int64_t claim_next[4] = {0, 0, 0, 0};   // the same for the prefetched step (overlap)
  const std::int64_t clock_tick = 1;
  std::int64_t current_claim = 0;              // the global step this worker's update will take
  std::vector<MPI_Request> push_requests;      // the last end_step's push (and SSP clock tick)
  std::vector<float> push_stage;               // scale*grad of that push (whole arena)
  std::vector<MPI_Request> step_requests;      // begin_step's claim and pull (kept: no allocation per step)
  std::vector<MPI_Request> prefetch_requests;  // overlap: the next step's claim and pull
  std::vector<float> prefetch_params;
  bool prefetching = false;
  bool remote_incomplete = false;              // pushes sent without a flush since
  // Staleness is known once a later claim reports how many steps were claimed meanwhile:
  std::vector<std::int64_t> unresolved;        // steps pushed, not yet given to a claim
  std::vector<std::int64_t> resolving;         // steps the claim in flight will resolve
  // The chief's EMA shadow, stored with requests after the first store (which sets the flag)
  std::vector<float> shadow_stage;
  std::vector<MPI_Request> shadow_requests;
  bool shadow_stored = false;

  detail::Liveness liveness;
  detail::Timeline timeline;
  Clock::time_point compute_since{};
  bool computing = false;

  explicit Impl(Session& s) : session(s), timeline(!s.options().timeline.empty()) {}

  bool by_request = true;        // complete by request (transport needs the target) or by flush (one node)
  detail::RequestWaiter waiter;  // sleeps on sockets while waiting when the transport needs the target
  void waitall(std::vector<MPI_Request>& reqs) { waiter.wait_all(reqs); }

  // One atomic read-modify-write of `count` control slots from `slot` (MPI_NO_OP: a read),
  // completed by its request (the data coming back), not a flush.
  void control_op(int slot, const std::int64_t* add, std::int64_t* result, int count, MPI_Op op) {
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Rget_accumulate(add, op == MPI_NO_OP ? 0 : count, MPI_INT64_T, result, count, MPI_INT64_T,
                                          detail::ctrl::kControlRank, slot, count, MPI_INT64_T, op, win.control.get(),
                                          &r));
    waiter.wait(r);
  }

  // Reads the arena into `dst`, one operation per piece: MPI_Get_accumulate(MPI_NO_OP) (the
  // conforming element-wise atomic read, ordered after this worker's accumulates) or MPI_Get.
  // With `reqs` by request (complete with a wait), else plain (complete with a flush).
  void issue_pull(float* dst, std::vector<MPI_Request>* reqs) {
    const MPI_Win w = win.params.get();
    const bool atomic = options().pull == PullMethod::GetAccumulate;
    for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      if (!reqs) {
        if (atomic)
          ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, dst + off, n, MPI_FLOAT, target, disp, n,
                                               MPI_FLOAT, MPI_NO_OP, w));
        else
          ASYNCPS_MPI_CHECK(MPI_Get(dst + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, w));
        return;
      }
      MPI_Request r;
      if (atomic)
        ASYNCPS_MPI_CHECK(MPI_Rget_accumulate(nullptr, 0, MPI_FLOAT, dst + off, n, MPI_FLOAT, target, disp, n,
                                              MPI_FLOAT, MPI_NO_OP, w, &r));
      else
        ASYNCPS_MPI_CHECK(MPI_Rget(dst + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, w, &r));
      reqs->push_back(r);
    });
  }

  // Accumulates (MPI_SUM) `n` elements of `type` from `origin` into `w` at target/disp: by
  // request when the transport needs the target (the request goes to push_requests, completed
  // by complete_push; the flush at drain makes it remote), else plain (completed by the next
  // flush of `w`). The origin buffer must stay untouched until then.
  void issue_accumulate(const void* origin, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Win w) {
    if (!by_request) {
      ASYNCPS_MPI_CHECK(MPI_Accumulate(origin, n, type, target, disp, n, type, MPI_SUM, w));
      return;
    }
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Raccumulate(origin, n, type, target, disp, n, type, MPI_SUM, w, &r));
    push_requests.push_back(r);
  }

  // push_stage = scale * grad. False when an element of it is NaN or Inf: that is what would be
  // pushed (a non-finite gradient, a non-finite scale, or a finite product that overflows float
  // all show up here), checked by one vectorised pass over its bits.
  bool stage(std::span<const float> grad, float scale) {
    push_stage.resize(arena());
    detail::scale_into(push_stage.data(), grad.data(), grad.size(), scale);  // scale * grad
    return detail::all_finite(push_stage.data(), push_stage.size());
  }

  // Claims one step (fetching [step, halt, done] before the +1) and pulls into `dst`; complete
  // with finish_claim. By request when the transport needs the target (the data coming back
  // completes them: one wait, no flush round trip); on one node (osc rdma) as plain operations
  // completed by one flush per window, the faster form there (a hardware fetch-and-op).
  void start_claim_and_pull(float* dst, std::int64_t* result, std::vector<MPI_Request>& reqs) {
    if (!by_request) {
      ASYNCPS_MPI_CHECK(MPI_Fetch_and_op(&claim_add[0], &result[0], MPI_INT64_T, detail::ctrl::kControlRank,
                                         detail::ctrl::kGlobalStep, MPI_SUM, win.control.get()));
      ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_INT64_T, result + 1, 3, MPI_INT64_T,
                                           detail::ctrl::kControlRank, detail::ctrl::kHalt, 3, MPI_INT64_T, MPI_NO_OP,
                                           win.control.get()));
      issue_pull(dst, nullptr);
      return;
    }
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Rget_accumulate(claim_add, 4, MPI_INT64_T, result, 4, MPI_INT64_T, detail::ctrl::kControlRank,
                                          detail::ctrl::kGlobalStep, 4, MPI_INT64_T, MPI_SUM, win.control.get(), &r));
    reqs.push_back(r);
    issue_pull(dst, &reqs);
  }

  void finish_claim(std::vector<MPI_Request>& reqs) {
    if (by_request) return waitall(reqs);
    ASYNCPS_MPI_CHECK(MPI_Win_flush(detail::ctrl::kControlRank, win.control.get()));  // also an SSP clock tick
    flush(win.params);  // also completes the last push
    remote_incomplete = false;
  }

  // Every claim reports the steps claimed before it: the updates pushed before it was sent
  // have a staleness of (that count) - (their own step).
  void resolve(std::int64_t claimed_before) {
    for (std::int64_t landed : resolving) staleness.record(std::max<std::int64_t>(0, claimed_before - landed));
    resolving.clear();
  }

  // Completes the last push (locally: its buffer is free; the flush at drain makes it remote).
  void complete_push() {
    if (push_requests.empty()) return;
    const auto t0 = Clock::now();
    waitall(push_requests);
    stats.wait_seconds += seconds_since(t0);
    timeline.span("push wait", t0, Clock::now());
  }

  // MPI_Get is not ordered after our accumulates: our last push must be complete at the
  // servers before a pull may read (MPI_Get_accumulate is ordered: nothing to do).
  void order_pull_after_push() {
    if (options().pull != PullMethod::Get || !remote_incomplete) return;
    complete_push();
    flush(win.params);
    remote_incomplete = false;
  }

  // Ends everything still in flight: the prefetched claim is given back (never used).
  void settle() {
    if (prefetching) {
      finish_claim(prefetch_requests);
      prefetching = false;
      resolve(claim_next[0]);
      fetch_and_add(detail::ctrl::kGlobalStep, -1, MPI_SUM);
    }
    complete_push();
    if (remote_incomplete) {
      flush(win.params);
      if (options().mode == Mode::Ssp) flush(win.control);
      remote_incomplete = false;
    }
    if (!shadow_requests.empty()) {
      waitall(shadow_requests);
      flush(win.shadow);
    }
    // updates no later claim reported on: the steps claimed by now
    resolving.insert(resolving.end(), unresolved.begin(), unresolved.end());
    unresolved.clear();
    if (!resolving.empty()) resolve(fetch_and_add(detail::ctrl::kGlobalStep, 0, MPI_NO_OP));
  }

  void end_compute() {
    if (!computing) return;
    computing = false;
    timeline.span("compute", compute_since, Clock::now());
  }

  std::size_t arena() const { return session.layout().size(); }

  void check_size(std::size_t n, const char* what) const {
    if (n != arena())
      throw ConfigError(std::string(what) + ": span has " + std::to_string(n) + " floats, the layout has " +
                        std::to_string(arena()));
  }

  // Calls op(target, target_disp, arena_offset, count) for each piece of the arena: one per
  // shard, large shards cut into chunk_floats pieces (pt2pt slows sharply on huge messages).
  template <class Op>
  void for_each_piece(Op op) const {
    for (const Shard& sh : session.plan().shards()) {
      for (std::size_t done = 0; done < sh.size; done += chunk_floats) {
        const std::size_t n = std::min(chunk_floats, sh.size - done);
        op(sh.server, static_cast<MPI_Aint>(done), sh.offset + done, static_cast<int>(n));
      }
    }
  }

  int take_staging() {
    if (free_staging.empty()) {
      staging.emplace_back(arena());
      return static_cast<int>(staging.size() - 1);
    }
    const int i = free_staging.back();
    free_staging.pop_back();
    return i;
  }

  // target window += scale * grad, request-based: staged copy, one MPI_Raccumulate per piece.
  Ticket start_accumulate(const detail::Window& target_win, std::span<const float> grad, float scale) {
    const auto t0 = Clock::now();
    const int buf = take_staging();
    float* scaled = staging[static_cast<std::size_t>(buf)].data();
    detail::scale_into(scaled, grad.data(), grad.size(), scale);  // the update the servers add
    Pending p;
    p.staging = buf;
    p.win = target_win.get();
    for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      MPI_Request r;
      ASYNCPS_MPI_CHECK(MPI_Raccumulate(scaled + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM, p.win, &r));
      p.requests.push_back(r);
    });
    const Ticket t = next_ticket++;
    pending.emplace(t, std::move(p));
    ++stats.pushes;
    stats.push_seconds += seconds_since(t0);
    return t;
  }

  const Options& options() const { return session.options(); }
  int num_workers() const { return session.roles().num_workers(); }

  // Completes this worker's operations on `w` at every server that holds a shard.
  void flush(MPI_Win w) {
    for (const Shard& sh : session.plan().shards())
      if (sh.size > 0) ASYNCPS_MPI_CHECK(MPI_Win_flush(sh.server, w));
  }
  void flush(const detail::Window& w) { flush(w.get()); }

  // The global step has reached the limit or a worker asked for a halt (one atomic read of
  // the two adjacent slots).
  // In sync mode a worker that has left (drained) can never arrive again: the rounds are over.
  bool job_complete() {
    static_assert(detail::ctrl::kHalt == detail::ctrl::kGlobalStep + 1 && detail::ctrl::kDone == detail::ctrl::kGlobalStep + 2 &&
                  detail::ctrl::kBeat0 == detail::ctrl::kGlobalStep + 3);
    std::int64_t v[4] = {0, 0, 0, 0};  // step, halt, done, server 0's heartbeat
    control_op(detail::ctrl::kGlobalStep, nullptr, v, 4, MPI_NO_OP);
    liveness.saw_server0(v[3]);
    last_seen_step = v[0];
    return v[0] >= limit || v[1] != 0 || (options().mode == Mode::Sync && v[2] != 0);
  }
  std::int64_t last_seen_step = 0;

  // Sleeps with exponential back-off (20 us .. 1 ms) until ready() or the job is complete.
  // Returns false if the job completed first.
  template <class Ready>
  bool wait_until(Ready ready) {
    const auto t0 = Clock::now();
    int backoff_us = 20;
    bool waited = false;
    for (;;) {
      liveness.beat();  // waiting is alive: the rank waited for is the silent one
      if (ready()) break;
      if (job_complete()) return false;
      waited = true;
      std::this_thread::sleep_for(std::chrono::microseconds(backoff_us));
      backoff_us = std::min(backoff_us * 2, 1000);
    }
    if (waited) {
      ++stats.mode_waits;
      stats.mode_wait_seconds += seconds_since(t0);
    }
    return true;
  }

  // The slowest worker's clock (workers that have drained count as infinitely fast).
  std::int64_t min_clock() {
    std::vector<std::int64_t> clocks(static_cast<std::size_t>(num_workers()));
    control_op(detail::ctrl::kClocks, nullptr, clocks.data(), num_workers(), MPI_NO_OP);
    return *std::min_element(clocks.begin(), clocks.end());
  }

  // Sync mode, run by the last worker to arrive in a round: arena += accum; accum = 0, all with
  // atomic accumulate operations (nobody else touches accum until the version moves).
  void apply_sync_round() {
    sync_sum.resize(arena());
    for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, sync_sum.data() + off, n, MPI_FLOAT, target, disp, n,
                                           MPI_FLOAT, MPI_NO_OP, win.accum.get()));
    });
    flush(win.accum);
    for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      ASYNCPS_MPI_CHECK(MPI_Accumulate(sync_sum.data() + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM,
                                       win.params.get()));
    });
    flush(win.params);
    // accum -= what was fetched: exactly zero (x - x == 0 in floating point)
    for (float& v : sync_sum) v = -v;
    for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      ASYNCPS_MPI_CHECK(MPI_Accumulate(sync_sum.data() + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM,
                                       win.accum.get()));
    });
    flush(win.accum);
    fetch_and_add(detail::ctrl::kArrivals, -num_workers(), MPI_SUM);  // W -> 0
    fetch_and_add(detail::ctrl::kGlobalStep, 1, MPI_SUM);            // the step first,
    fetch_and_add(detail::ctrl::kVersion, 1, MPI_SUM);               // then release the waiters
  }

  std::int64_t fetch_and_add(int slot, std::int64_t add, MPI_Op op) {
    std::int64_t old = 0;
    control_op(slot, &add, &old, 1, op);
    return old;
  }
};

WorkerClient::WorkerClient(Session& session) : impl_(std::make_unique<Impl>(session)) {
  if (!session.roles().is_worker())
    throw ConfigError("rank " + std::to_string(session.roles().rank) + " is a server, not a worker");
  impl_->chunk_floats = std::max<std::size_t>(1, session.options().chunk_bytes / sizeof(float));
  // the transport needs the target (pt2pt): complete by request, and sleep while waiting
  impl_->by_request = session.server_progress() == ServerProgress::Wake;
  impl_->waiter = detail::RequestWaiter(impl_->by_request, session.options().wait_spin_us,
                                        session.shared_memory_neighbours() ? 100 : 1000);
  impl_->win = detail::open_windows(session);
  detail::restore_checkpoint(session);             // collective with the servers' constructors
  ASYNCPS_MPI_CHECK(MPI_Barrier(session.comm()));  // the servers have filled their shards
  impl_->timeline.set_origin();
  impl_->liveness = detail::Liveness(session, impl_->win);
  const int s = session.roles().num_servers;
  impl_->waiter.watch(&impl_->liveness, s == 1 ? "an answer from " + session.describe_rank(0)
                                               : "an answer from the servers (ranks 0-" + std::to_string(s - 1) + ")");
  impl_->liveness.beat();
}

WorkerClient::~WorkerClient() {
  if (detail::unwinding()) {  // the job is about to abort: enter no collective, free nothing
    (void)impl_.release();
    return;
  }
  try {
    finish();
  } catch (const std::exception& e) {
    // destructors never throw, and the other ranks wait for this one in collectives: abort all
    abort_job((std::string("WorkerClient::finish failed: ") + e.what()).c_str());
  }
}

void WorkerClient::pull(std::span<float> params) {
  impl_->check_size(params.size(), "WorkerClient::pull");
  const auto t0 = Clock::now();
  impl_->issue_pull(params.data(), nullptr);
  impl_->flush(impl_->win.params);
  ++impl_->stats.pulls;
  impl_->stats.pull_seconds += seconds_since(t0);
  impl_->timeline.span("pull", t0, Clock::now());
}

void WorkerClient::push(std::span<const float> grad, float scale) {
  Impl& m = *impl_;
  m.check_size(grad.size(), "WorkerClient::push");
  if (m.drained) throw Error("WorkerClient::push after drain(): this worker said it was done updating");
  const auto t0 = Clock::now();
  // Plain MPI_Accumulate (no request objects on the hot path). Each piece (at most
  // chunk_bytes) is scaled into a small staging buffer that stays in cache, accumulated, and
  // completed locally before the buffer is reused: one pass over the gradient, not two.
  // (A ring of 4 staging slots with MPI_Raccumulate, so that scaling, sending and the server's
  // adding overlap, measured no faster across hosts — 16 MiB at 2.0-2.1 GB/s either way, the
  // limit is pt2pt's target side — and 2x slower on one node: not used.)
  const std::size_t piece = std::min(m.chunk_floats, m.arena());
  m.push_buffer.resize(piece);
  float* scaled = m.push_buffer.data();
  const MPI_Win w = m.win.params.get();
  m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    detail::scale_into(scaled, grad.data() + off, static_cast<std::size_t>(n), scale);  // scale * grad
    ASYNCPS_MPI_CHECK(MPI_Accumulate(scaled, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM, w));
    ASYNCPS_MPI_CHECK(MPI_Win_flush_local(target, w));  // the buffer may be reused now
  });
  m.flush(m.win.params);
  ++m.stats.pushes;
  m.stats.push_seconds += seconds_since(t0);
  m.timeline.span("push", t0, Clock::now());
}

Ticket WorkerClient::push_async(std::span<const float> grad, float scale) {
  impl_->check_size(grad.size(), "WorkerClient::push");
  if (impl_->drained) throw Error("WorkerClient::push after drain(): this worker said it was done updating");
  return impl_->start_accumulate(impl_->win.params, grad, scale);
}

Ticket WorkerClient::pull_async(std::span<float> params) {
  impl_->check_size(params.size(), "WorkerClient::pull_async");
  const auto t0 = Clock::now();
  Impl::Pending p;
  impl_->issue_pull(params.data(), &p.requests);
  const Ticket t = impl_->next_ticket++;
  impl_->pending.emplace(t, std::move(p));
  ++impl_->stats.pulls;
  impl_->stats.pull_seconds += seconds_since(t0);
  return t;
}

void WorkerClient::wait(Ticket ticket) {
  auto it = impl_->pending.find(ticket);
  if (it == impl_->pending.end()) throw Error("WorkerClient::wait: unknown or already completed ticket");
  const auto t0 = Clock::now();
  impl_->waitall(it->second.requests);
  // A push's request completion is local (the buffer is reusable); the flush makes it remote too.
  if (it->second.win != MPI_WIN_NULL) impl_->flush(it->second.win);
  if (it->second.staging >= 0) impl_->free_staging.push_back(it->second.staging);
  impl_->pending.erase(it);
  impl_->stats.wait_seconds += seconds_since(t0);
}

void WorkerClient::wait_all() {
  while (!impl_->pending.empty()) wait(impl_->pending.begin()->first);
}

std::int64_t WorkerClient::next_step() {
  ++impl_->stats.steps;
  return impl_->fetch_and_add(detail::ctrl::kGlobalStep, 1, MPI_SUM) + 1;
}

std::optional<std::int64_t> WorkerClient::claim_step(std::int64_t limit) {
  const std::int64_t mine = impl_->fetch_and_add(detail::ctrl::kGlobalStep, 1, MPI_SUM) + 1;
  if (mine <= limit) {
    ++impl_->stats.steps;
    return mine;
  }
  impl_->fetch_and_add(detail::ctrl::kGlobalStep, -1, MPI_SUM);  // over the limit: give it back
  return std::nullopt;
}

std::int64_t WorkerClient::global_step() { return impl_->fetch_and_add(detail::ctrl::kGlobalStep, 0, MPI_NO_OP); }

void WorkerClient::drain() {
  if (impl_->drained) return;
  impl_->end_compute();
  wait_all();
  impl_->settle();
  // A worker that is done no longer holds anyone back in SSP: its clock jumps far ahead.
  impl_->fetch_and_add(detail::ctrl::kClocks + worker_index(), std::int64_t{1} << 60, MPI_SUM);
  impl_->fetch_and_add(detail::ctrl::kDone, 1, MPI_SUM);
  impl_->drained = true;
  const std::int64_t workers = impl_->session.roles().num_workers();
  for (;;) {
    std::int64_t v[2] = {0, 0};  // done, server 0's heartbeat
    impl_->control_op(detail::ctrl::kDone, nullptr, v, 2, MPI_NO_OP);
    impl_->liveness.saw_server0(v[1]);
    if (v[0] >= workers) break;
    impl_->liveness.beat();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  impl_->liveness.finished();  // silent from now on by right
}

void WorkerClient::finish() {
  if (!impl_ || impl_->finished) return;
  drain();
  impl_->finished = true;
  // Matches the servers' MPI_Ibarrier in serve(): completes when every worker is here. A worker
  // may wait here long (the chief evaluating after drain()): while it does, it watches server
  // 0's heartbeat, so only a silent server 0 ends the wait early; the epochs end after it.
  MPI_Request done = MPI_REQUEST_NULL;
  ASYNCPS_MPI_CHECK(MPI_Ibarrier(impl_->session.comm(), &done));
  auto last_look = Clock::now();
  detail::wait_sleeping(done, 200, [&] {
    if (!impl_->liveness.enabled() || Clock::now() - last_look < std::chrono::milliseconds(250)) return;
    last_look = Clock::now();
    std::int64_t beat0 = 0;
    impl_->control_op(detail::ctrl::kBeat0, nullptr, &beat0, 1, MPI_NO_OP);
    impl_->liveness.saw_server0(beat0);
  });
  impl_->win.end_epochs();
  impl_->final_state = detail::finish_job(impl_->session, impl_->win, nullptr);  // the final checkpoint
  impl_->job_staleness = detail::allreduce_staleness(impl_->session.comm(), impl_->staleness);
  detail::write_timeline(impl_->session, impl_->timeline);
}

std::optional<StepStart> WorkerClient::begin_step(std::span<float> params, std::int64_t limit) {
  Impl& m = *impl_;
  m.check_size(params.size(), "WorkerClient::begin_step");
  if (m.drained) throw Error("WorkerClient::begin_step after drain(): this worker said it was done updating");
  m.end_compute();
  m.limit = limit;
  m.liveness.beat();
  const Mode mode = m.options().mode;
  if (mode == Mode::Sync) {
    if (m.version_base < 0) m.version_base = m.fetch_and_add(detail::ctrl::kVersion, 0, MPI_NO_OP);
    const std::int64_t want = m.version_base + m.clock;  // every round before ours is applied
    const auto t0 = Clock::now();
    const bool go = m.wait_until([&] { return m.fetch_and_add(detail::ctrl::kVersion, 0, MPI_NO_OP) >= want; });
    m.timeline.span("wait (sync round)", t0, Clock::now());
    if (!go || m.job_complete()) return std::nullopt;
    m.begin_global_step = m.last_seen_step;
    pull(params);
    m.computing = true;
    m.compute_since = Clock::now();
    return StepStart{m.begin_global_step, m.clock};
  }
  if (mode == Mode::Ssp) {
    std::int64_t slowest = 0;
    const std::int64_t s = m.options().staleness;
    const auto t0 = Clock::now();
    const bool go = m.wait_until([&] { return (slowest = m.min_clock()) >= m.clock - s; });
    m.timeline.span("wait (ssp bound)", t0, Clock::now());
    if (!go) return std::nullopt;
    m.stats.max_clock_gap = std::max(m.stats.max_clock_gap, m.clock - slowest);
  }
  const auto t0 = Clock::now();
  const std::int64_t* got = m.claim_now;
  if (m.prefetching) {  // overlap: claimed and pulled while the last gradient was computed
    m.finish_claim(m.prefetch_requests);
    m.prefetching = false;
    std::copy(m.prefetch_params.begin(), m.prefetch_params.end(), params.begin());
    got = m.claim_next;
  } else {
    m.order_pull_after_push();
    m.resolving.insert(m.resolving.end(), m.unresolved.begin(), m.unresolved.end());
    m.unresolved.clear();
    m.start_claim_and_pull(params.data(), m.claim_now, m.step_requests);
    m.finish_claim(m.step_requests);
  }
  m.complete_push();  // (usually long complete: it left before the claim and pull)
  const std::int64_t before = got[0], halt = got[1];
  m.liveness.saw_server0(got[3]);
  m.resolve(before);
  ++m.stats.pulls;
  m.stats.pull_seconds += seconds_since(t0);
  m.timeline.span(m.options().overlap && mode == Mode::Async ? "claim+pull (prefetched)" : "claim+pull", t0, Clock::now());
  if (before + 1 > limit || halt != 0) {  // the job is complete (or halted): give the step back
    m.fetch_and_add(detail::ctrl::kGlobalStep, -1, MPI_SUM);
    return std::nullopt;
  }
  m.current_claim = before + 1;
  m.begin_global_step = before;
  if (m.options().overlap && mode == Mode::Async) {
    // the next step's claim and pull fly during this compute (its parameters miss this step's
    // own update: one step more staleness, which the report counts)
    m.prefetch_params.resize(m.arena());
    m.order_pull_after_push();
    m.resolving = std::move(m.unresolved);
    m.unresolved.clear();
    m.start_claim_and_pull(m.prefetch_params.data(), m.claim_next, m.prefetch_requests);
    m.prefetching = true;
  }
  m.computing = true;
  m.compute_since = Clock::now();
  return StepStart{m.begin_global_step, m.clock};
}

StepEnd WorkerClient::end_step(std::span<const float> grad, float scale) {
  Impl& m = *impl_;
  m.check_size(grad.size(), "WorkerClient::end_step");
  m.end_compute();
  const Mode mode = m.options().mode;
  StepEnd out;
  if (mode == Mode::Sync) {
    const auto t0 = Clock::now();
    // accum += (scale / W) * grad: the round applies the mean of the W workers' updates; NaN or
    // Inf never reaches it (stage checks what would be pushed)
    out.nonfinite = !m.stage(grad, scale / static_cast<float>(m.num_workers()));
    if (out.nonfinite) {
      ++m.stats.nonfinite;
    } else {
      m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
        m.issue_accumulate(m.push_stage.data() + off, n, MPI_FLOAT, target, disp, m.win.accum.get());
      });
      m.complete_push();
      m.flush(m.win.accum);  // complete at the servers before we announce our arrival
    }
    if (m.fetch_and_add(detail::ctrl::kArrivals, 1, MPI_SUM) == m.num_workers() - 1) m.apply_sync_round();
    ++m.clock;
    m.staleness.record(0);
    out.applied = !out.nonfinite;
    out.global_step = m.begin_global_step + 1;
    m.timeline.span("push (sync round)", t0, Clock::now());
    return out;
  }
  if (m.current_claim == 0) throw Error("WorkerClient::end_step without a begin_step that returned a step");
  const auto t0 = Clock::now();
  out.global_step = std::exchange(m.current_claim, 0);  // claimed in begin_step: exactly `limit` steps in all
  ++m.stats.steps;
  ++m.clock;  // a skipped update still spends its step (and its clock: nobody waits for it)
  m.complete_push();  // overlap: the buffer of the last push is free again
  std::int64_t tau = -1;
  if (m.options().staleness_lr) {  // needs tau now: one read of the steps claimed since ours
    tau = std::max<std::int64_t>(0, m.fetch_and_add(detail::ctrl::kGlobalStep, 0, MPI_NO_OP) - out.global_step);
    scale /= static_cast<float>(std::max<std::int64_t>(1, tau));
  }
  out.nonfinite = !m.stage(grad, scale);  // NaN or Inf in what would be pushed: nothing is
  if (out.nonfinite) {
    ++m.stats.nonfinite;
  } else {
    if (tau >= 0) m.staleness.record(tau);
    else m.unresolved.push_back(out.global_step);
    m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      m.issue_accumulate(m.push_stage.data() + off, n, MPI_FLOAT, target, disp, m.win.params.get());
    });
    ++m.stats.pushes;
    out.applied = true;
  }
  if (mode == Mode::Ssp)  // (beside the push; for a skipped update too, so a NaN worker pins nobody)
    m.issue_accumulate(&m.clock_tick, 1, MPI_INT64_T, detail::ctrl::kControlRank,
                       detail::ctrl::kClocks + worker_index(), m.win.control.get());
  m.remote_incomplete = true;
  m.stats.push_seconds += seconds_since(t0);
  m.timeline.span("push", t0, Clock::now());
  return out;
}

void WorkerClient::request_halt() { impl_->fetch_and_add(detail::ctrl::kHalt, 1, MPI_SUM); }
bool WorkerClient::halted() const noexcept { return impl_->final_state.halted; }
std::int64_t WorkerClient::final_step() const noexcept { return impl_->final_state.global_step; }

void WorkerClient::store_shadow(std::span<const float> shadow) {
  Impl& m = *impl_;
  m.check_size(shadow.size(), "WorkerClient::store_shadow");
  const auto t0 = Clock::now();
  m.waitall(m.shadow_requests);  // the last store's copy is free again
  m.shadow_stage.assign(shadow.begin(), shadow.end());
  m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Raccumulate(m.shadow_stage.data() + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_REPLACE,
                                      m.win.shadow.get(), &r));
    m.shadow_requests.push_back(r);
  });
  if (!m.shadow_stored) {  // the first store is complete before the servers call the shadow valid
    m.waitall(m.shadow_requests);
    m.flush(m.win.shadow);
    m.fetch_and_add(detail::ctrl::kShadowValid, 1, MPI_SUM);
    m.shadow_stored = true;
  }  // later ones complete in the background (each element whole: MPI_REPLACE is atomic)
  m.timeline.span("store EMA shadow", t0, Clock::now());
}

bool WorkerClient::load_shadow(std::span<float> shadow) {
  Impl& m = *impl_;
  m.check_size(shadow.size(), "WorkerClient::load_shadow");
  if (m.fetch_and_add(detail::ctrl::kShadowValid, 0, MPI_NO_OP) == 0) return false;
  m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, shadow.data() + off, n, MPI_FLOAT, target, disp, n,
                                         MPI_FLOAT, MPI_NO_OP, m.win.shadow.get()));
  });
  m.flush(m.win.shadow);
  return true;
}

const StalenessHistogram& WorkerClient::staleness() const noexcept { return impl_->staleness; }
const StalenessHistogram& WorkerClient::job_staleness() const noexcept { return impl_->job_staleness; }

bool WorkerClient::finished() const noexcept { return impl_->finished; }
const WorkerStats& WorkerClient::stats() const noexcept { return impl_->stats; }
int WorkerClient::worker_index() const noexcept { return impl_->session.roles().worker_index(); }

}  // namespace asyncps
