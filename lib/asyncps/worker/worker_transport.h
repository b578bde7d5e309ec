// defines: asyncps::detail::WorkerTransport, WorkerLayer
// A worker's transport: the rank's runtime (windows, control block, heartbeats, timeline), the
// completion strategy chosen for its step (RmaChannel), its tickets and statistics. WorkerClient
// is its public face; the layers above (StepLoop, ShadowStore) reach it through
// WorkerClient::transport() and use only what is declared here. Each keeps its state in a
// WorkerLayer of its own type, which the transport holds (layer()), so that drain() can ask it to
// settle what it has in flight and its buffers live as long as the windows.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/staleness.h"
#include "asyncps/worker_client.h"
#include "core/vector_ops.h"
#include "runtime/rank_runtime.h"
#include "runtime/termination.h"

namespace asyncps::detail {

using WorkerClock = std::chrono::steady_clock;
inline double seconds_since(WorkerClock::time_point t0) {
  return std::chrono::duration<double>(WorkerClock::now() - t0).count();
}

// A layer built on the transport that may have operations in flight (a prefetched claim, a
// deferred push, a background shadow store).
class WorkerLayer {
 public:
  virtual ~WorkerLayer() = default;
  // Completes (or gives back) everything in flight; drain() calls it before the worker leaves.
  virtual void settle() = 0;
};

class WorkerTransport {
 public:
  explicit WorkerTransport(Session& session);  // collective with the servers
  WorkerTransport(const WorkerTransport&) = delete;
  WorkerTransport& operator=(const WorkerTransport&) = delete;

  // Every public call of the worker's layers starts here: the FUNNELED rule, and no use of the
  // windows once finish() freed them.
  void enter(const char* call) const;
  // ... and every call that would update the arena or claim a step: not after drain().
  void check_updating(const char* call) const;
  void check_size(std::size_t n, const char* call) const;
  static void check_scale(float scale, const char* call);
  // A step limit: at most 2^62 (drained workers' SSP clocks jump by 2^60; counts never wrap).
  static void check_limit(std::int64_t limit, const char* call);
  // All four checks of a call that sends an update, in that order (thread, size, scale, drain).
  void check_push(std::span<const float> grad, float scale, const char* call) const;

  // ---- WorkerClient's operations (documented in asyncps/worker_client.h) -----------------------
  void pull(std::span<float> params);
  void push(std::span<const float> grad, float scale);
  Ticket push_async(std::span<const float> grad, float scale);
  Ticket pull_async(std::span<float> params);
  void wait(Ticket ticket);
  void wait_all();
  void progress();
  void drain();
  void finish();

  // ---- for the layers -------------------------------------------------------------------------
  // The layer of type L on this worker: made by `make()` (a std::unique_ptr<L>) on first use,
  // the same one afterwards (its state is the worker's, as its slots in the control block are:
  // a second StepLoop on one worker goes on where the first stopped).
  template <class L, class Make>
  L& layer(Make make) {
    const void* const key = layer_key<L>();
    for (const auto& [k, l] : layers_)
      if (k == key) return static_cast<L&>(*l);  // (made below as an L under this key)
    std::unique_ptr<L> made = make();
    L& ref = *made;
    layers_.emplace_back(key, std::move(made));
    return ref;
  }
  Session& session() noexcept { return rt_.session(); }
  const Options& options() const noexcept { return options_; }
  std::size_t arena() const noexcept { return arena_; }
  int num_workers() const noexcept { return num_workers_; }
  int worker_index() const noexcept { return worker_index_; }
  RmaChannel& channel() noexcept { return rt_.channel(); }
  ControlBlock& control() noexcept { return rt_.control(); }
  // Once SIGTERM has arrived (runtime/termination.h): asks every rank to stop, once.
  void halt_if_terminated() {
    if (!termination_posted_ && termination_requested()) {
      termination_posted_ = true;
      control().request_halt(/*terminated=*/true);
    }
  }
  Liveness& liveness() noexcept { return rt_.liveness(); }
  Timeline& timeline() noexcept { return rt_.timeline(); }
  WorkerStats& stats() noexcept { return stats_; }
  // This worker's update staleness (the step layer records it; finish() sums every worker's).
  StalenessHistogram& staleness() noexcept { return staleness_; }
  const StalenessHistogram& job_staleness() const noexcept { return end_.staleness; }
  std::uint64_t job_nonfinite() const noexcept { return end_.nonfinite; }
  const FinalState& final_state() const noexcept { return end_.state; }
  bool drained() const noexcept { return drained_; }
  bool finished() const noexcept { return finished_; }
  const RestoredShard& restored() const noexcept { return rt_.restored(); }
  // The compute span between a step's begin and end (the timeline's "compute").
  void begin_compute() noexcept;
  void end_compute();

 private:
  struct Pending {
    RmaBatch batch;
    int staging = -1;  // index into the staging pool, or -1
  };
  int take_staging();
  const Session& rt_session() const noexcept { return rt_session_; }

  const Session& rt_session_;
  RankRuntime rt_;
  const Options& options_;
  std::size_t arena_ = 0;
  int num_workers_ = 0, worker_index_ = -1;
  bool finished_ = false, drained_ = false, termination_posted_ = false;
  WorkerStats stats_;
  StalenessHistogram staleness_;
  JobEnd end_;
  // Each layer type's key: the address of a variable of its own (no RTTI needed to find it).
  template <class L>
  static const void* layer_key() noexcept {
    static const char key = 0;
    return &key;
  }
  std::vector<std::pair<const void*, std::unique_ptr<WorkerLayer>>> layers_;
  std::unordered_map<Ticket, Pending> pending_;
  Ticket next_ticket_ = 1;
  std::vector<AlignedFloats> staging_;        // push_async's scale*grad copies: a pool, reused
  std::vector<int> free_staging_;
  AlignedFloats push_buffer_;                // blocking push's scale*grad, one piece at a time
  WorkerClock::time_point compute_since_{};
  bool computing_ = false;
};

}  // namespace asyncps::detail
