// defines: asyncps::WorkerClient::Impl — the worker's state, shared by the layers built on it
// (worker_client.cpp: the transport; step_loop.cpp: the step policy; shadow_store.cpp: the
// EMA helper). Private to the library.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/stall_watch.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"
#include "check.h"
#include "checkpointer.h"
#include "control_block.h"
#include "liveness.h"
#include "progress.h"
#include "timeline.h"
#include "vector_ops.h"
#include "windows.h"

namespace asyncps {

namespace worker_detail {
using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace worker_detail
using worker_detail::Clock;
using worker_detail::seconds_since;

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
  // its step and pulls in one go. By request (Wake progress): one MPI_Rget_accumulate(SUM, +1)
  // on [step, halt, done, beat] next to the pulls, every request completed by its data, one
  // wait, no flush; end_step's push leaves with requests, completed in the next begin_step's
  // wait. By flush (Poll, one node): MPI_Fetch_and_op on the step, MPI_Get_accumulate on the
  // rest, plain pulls and pushes, all completed by the flushes of finish_claim.
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
  // DC-ASGD (Options::dc_lambda > 0): the parameters the gradient was computed at, the arena
  // read again before the push, and the compensated gradient
  std::vector<float> dc_read, dc_now, dc_grad;
  detail::Timeline timeline;
  Clock::time_point compute_since{};
  bool computing = false;

  explicit Impl(Session& s) : session(s), timeline(!s.options().timeline.empty()) {}

  bool by_request = true;        // complete by request (transport needs the target) or by flush (one node)
  detail::RequestWaiter waiter;  // sleeps on sockets while waiting when the transport needs the target
  void waitall(std::vector<MPI_Request>& reqs) {
    liveness.beat();  // every operation that enters MPI beats (flush, control_op, waitall): alive
    waiter.wait_all(reqs);
  }

  // One atomic read-modify-write of `count` control slots from `slot` (MPI_NO_OP: a read),
  // completed by its request (the data coming back), not a flush.
  void control_op(int slot, const std::int64_t* add, std::int64_t* result, int count, MPI_Op op) {
    liveness.beat();
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
  // all show up here), checked in the same vectorised pass as the scaling.
  bool stage(std::span<const float> grad, float scale) {
    push_stage.resize(arena());
    return detail::scale_into_finite(push_stage.data(), grad.data(), grad.size(), scale);  // scale * grad
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
    flush_control();  // also an SSP clock tick
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

  // Every public call of the worker's layers starts here: the FUNNELED rule, and no use of the
  // windows once finish() freed them.
  void enter(const char* call) const {
    session.check_thread(call);
    if (finished) throw Error(std::string(call) + " after finish(): the worker's windows are freed");
  }
  static void check_scale(float scale, const char* call) {
    if (!std::isfinite(scale))
      throw ConfigError(std::string(call) + ": scale must be a finite number, got " + std::to_string(scale) +
                        " (nothing was sent)");
  }
  // A step limit: at most 2^62 (drained workers' SSP clocks jump by 2^60; counts never wrap).
  static void check_limit(std::int64_t limit, const char* call) {
    if (limit < 0 || limit > (std::int64_t{1} << 62))
      throw ConfigError(std::string(call) + ": limit must be in [0, 2^62], got " + std::to_string(limit));
  }

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
    if (!detail::scale_into_finite(scaled, grad.data(), grad.size(), scale)) {  // the update the servers add
      free_staging.push_back(buf);
      throw ConfigError("WorkerClient::push_async: scale * grad holds NaN or Inf (nothing was sent)");
    }
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

  // Completes this worker's operations on `w` at every server that holds a shard. A flush no
  // heartbeat covers (it blocks inside MPI): watched, so a server that stopped ends the job.
  void flush(MPI_Win w) {
    liveness.beat();
    const StallWatch watch(flush_timeout, flush_what, StallWatch::Borrowed{});
    for (const Shard& sh : session.plan().shards())
      if (sh.size > 0) ASYNCPS_MPI_CHECK(MPI_Win_flush(sh.server, w));
  }
  void flush_control() {
    liveness.beat();
    const StallWatch watch(flush_timeout, flush_what, StallWatch::Borrowed{});
    ASYNCPS_MPI_CHECK(MPI_Win_flush(detail::ctrl::kControlRank, win.control.get()));
  }
  double flush_timeout = 0;
  std::string flush_what;  // "worker 0 (rank 1 on h): waiting in MPI_Win_flush for the servers"
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
      if (ready()) break;  // (ready() and job_complete() beat: waiting is alive, the rank waited for is the silent one)
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


}  // namespace asyncps
