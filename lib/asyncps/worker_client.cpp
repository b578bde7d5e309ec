// defines: WorkerClient
#include "asyncps/worker_client.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "asyncps/error.h"
#include "check.h"
#include "control_block.h"
#include "windows.h"

namespace asyncps {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

struct WorkerClient::Impl {
  Session& session;
  detail::SessionWindows win;  // declared before the locks: locks are released first
  detail::LockAll lock_params;
  detail::LockAll lock_control;
  std::size_t chunk_floats = 0;
  bool finished = false;
  bool drained = false;
  WorkerStats stats;

  struct Pending {
    std::vector<MPI_Request> requests;
    int staging = -1;  // index into staging buffers, or -1
  };
  std::unordered_map<Ticket, Pending> pending;
  Ticket next_ticket = 1;
  std::vector<std::vector<float>> staging;  // scale*grad copies: a pool, reused
  std::vector<int> free_staging;

  explicit Impl(Session& s) : session(s) {}

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

  void flush_servers() {
    for (const Shard& sh : session.plan().shards())
      if (sh.size > 0) ASYNCPS_MPI_CHECK(MPI_Win_flush(sh.server, win.params.get()));
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

  std::int64_t fetch_and_add(int slot, std::int64_t add, MPI_Op op) {
    std::int64_t old = 0;
    ASYNCPS_MPI_CHECK(MPI_Fetch_and_op(&add, &old, MPI_INT64_T, detail::ctrl::kControlRank, slot, op,
                                       win.control.get()));
    ASYNCPS_MPI_CHECK(MPI_Win_flush(detail::ctrl::kControlRank, win.control.get()));
    return old;
  }
};

WorkerClient::WorkerClient(Session& session) : impl_(std::make_unique<Impl>(session)) {
  if (!session.roles().is_worker())
    throw ConfigError("rank " + std::to_string(session.roles().rank) + " is a server, not a worker");
  impl_->chunk_floats = std::max<std::size_t>(1, session.options().chunk_bytes / sizeof(float));
  impl_->win = detail::open_windows(session);
  impl_->lock_params = detail::LockAll(impl_->win.params.get());
  impl_->lock_control = detail::LockAll(impl_->win.control.get());
  ASYNCPS_MPI_CHECK(MPI_Barrier(session.comm()));  // the servers have filled their shards
}

WorkerClient::~WorkerClient() {
  if (detail::unwinding()) {  // the job is about to abort: enter no collective, free nothing
    (void)impl_.release();
    return;
  }
  try {
    finish();
  } catch (const std::exception&) {
    (void)impl_.release();  // destructors never throw; leave the windows rather than hang
  }
}

void WorkerClient::pull(std::span<float> params) {
  impl_->check_size(params.size(), "WorkerClient::pull");
  const auto t0 = Clock::now();
  const MPI_Win w = impl_->win.params.get();
  const bool atomic = impl_->session.options().pull == PullMethod::GetAccumulate;
  impl_->for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    if (atomic)  // MPI_NO_OP: the conforming element-wise atomic read
      ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, params.data() + off, n, MPI_FLOAT, target, disp, n,
                                           MPI_FLOAT, MPI_NO_OP, w));
    else
      ASYNCPS_MPI_CHECK(MPI_Get(params.data() + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, w));
  });
  impl_->flush_servers();
  ++impl_->stats.pulls;
  impl_->stats.pull_seconds += seconds_since(t0);
}

void WorkerClient::push(std::span<const float> grad, float scale) {
  wait(push_async(grad, scale));
}

Ticket WorkerClient::push_async(std::span<const float> grad, float scale) {
  impl_->check_size(grad.size(), "WorkerClient::push");
  if (impl_->drained) throw Error("WorkerClient::push after drain(): this worker said it was done updating");
  const auto t0 = Clock::now();
  const int buf = impl_->take_staging();
  float* scaled = impl_->staging[static_cast<std::size_t>(buf)].data();
  // scaled = scale * grad  (the update the servers add)
  for (std::size_t i = 0; i < grad.size(); ++i) scaled[i] = scale * grad[i];
  Impl::Pending p;
  p.staging = buf;
  const MPI_Win w = impl_->win.params.get();
  impl_->for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Raccumulate(scaled + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM, w, &r));
    p.requests.push_back(r);
  });
  const Ticket t = impl_->next_ticket++;
  impl_->pending.emplace(t, std::move(p));
  ++impl_->stats.pushes;
  impl_->stats.push_seconds += seconds_since(t0);
  return t;
}

Ticket WorkerClient::pull_async(std::span<float> params) {
  impl_->check_size(params.size(), "WorkerClient::pull_async");
  const auto t0 = Clock::now();
  Impl::Pending p;
  const MPI_Win w = impl_->win.params.get();
  const bool atomic = impl_->session.options().pull == PullMethod::GetAccumulate;
  impl_->for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    MPI_Request r;
    if (atomic)
      ASYNCPS_MPI_CHECK(MPI_Rget_accumulate(nullptr, 0, MPI_FLOAT, params.data() + off, n, MPI_FLOAT, target, disp,
                                            n, MPI_FLOAT, MPI_NO_OP, w, &r));
    else
      ASYNCPS_MPI_CHECK(MPI_Rget(params.data() + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, w, &r));
    p.requests.push_back(r);
  });
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
  auto& reqs = it->second.requests;
  ASYNCPS_MPI_CHECK(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
  // Request completion is local (the buffer is reusable); the flush makes it remote too.
  impl_->flush_servers();
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
  wait_all();
  impl_->fetch_and_add(detail::ctrl::kDone, 1, MPI_SUM);
  impl_->drained = true;
  const std::int64_t workers = impl_->session.roles().num_workers();
  while (impl_->fetch_and_add(detail::ctrl::kDone, 0, MPI_NO_OP) < workers)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void WorkerClient::finish() {
  if (!impl_ || impl_->finished) return;
  drain();
  impl_->lock_params.unlock();
  impl_->lock_control.unlock();
  impl_->finished = true;
  // Matches the servers' MPI_Ibarrier in serve(): completes when every worker is here.
  MPI_Request done = MPI_REQUEST_NULL;
  ASYNCPS_MPI_CHECK(MPI_Ibarrier(impl_->session.comm(), &done));
  detail::wait_sleeping(done, 200);
}

bool WorkerClient::finished() const noexcept { return impl_->finished; }
const WorkerStats& WorkerClient::stats() const noexcept { return impl_->stats; }
int WorkerClient::worker_index() const noexcept { return impl_->session.roles().worker_index(); }

}  // namespace asyncps
