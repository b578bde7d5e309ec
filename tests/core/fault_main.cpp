// Fails on purpose on one rank while the others go on, for the no-hang tests:
//   fault RANK WHERE
// WHERE:
//   window_scope   every rank holds a window and a lock_all epoch; RANK throws inside that scope
//                  while the others wait in a barrier (the library's own RAII must not enter
//                  the collective MPI_Win_free while unwinding)
//   construct      RANK (a server) passes initial parameters of the wrong size: a ConfigError on
//                  that server alone, while every other rank creates the windows
//   before_serve   RANK (a server) runs out of memory (std::bad_alloc) after the windows exist,
//                  before serving; the workers are training
//   serve_tick     RANK (a server) fails inside serve() after 0.3 s of serving
//   mid_training   RANK (a worker) fails after 50 steps; the others keep training
//   pause_in_step  (stall timeout 1 s) RANK (a worker) sleeps 4 s inside a step: a stall, named
//   pause_after_drain  (stall timeout 1 s) RANK (a worker) sleeps 4 s between drain() and
//                  finish() (the chief evaluating): no stall, the job ends well (exit 0,
//                  "pause_after_drain: ok"); the workers then train 2,000 steps, not forever
//   transport_loop (stall timeout 1 s) every worker drives the plain transport (pull, compute
//                  1 ms, push; no StepLoop) for 3 s: alive all along, so no stall (exit 0,
//                  "transport_loop: ok" from RANK)
//   late_start     (stall timeout 1 s) RANK sleeps 60 s before it creates the Session: the others
//                  wait in the Session's start-up collectives; watched, so the job ends within
//                  seconds, naming the start-up
//   server0_stops_in_pull  (stall timeout 1 s; run it with osc pt2pt, where nothing completes
//                  unless the target enters MPI) server 0 stops entering MPI after 0.3 s of
//                  serving while every worker sits in the blocking pull() (a flush): watched
//   after_finish   the workers train 20 steps and finish(); then every worker fails (RANK is
//                  not used), while the servers leave main: the job must still end at once (Open
//                  MPI 4.1's mpirun hung or crashed in about 1 run of 4 when ranks aborted after
//                  others had finalised)
//   no_worker_client (stall timeout 1 s) RANK (a worker) makes its Session but never its
//                  WorkerClient: the others wait in the windows' creation; server 0 names RANK
//   halt_keeps_older DIR  checkpoints in DIR every 0.1 s, keep 1; 20 steps after a periodic
//                  checkpoint is in DIR, RANK (a worker) asks for a halt: the final save must not
//                  prune the last periodic checkpoint
// The workers train "forever" (1e12 steps), so only the failure can end the job. It must end
// every rank, non-zero, within seconds, with one line naming the failure and the rank.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <cstdio>
#include <vector>

#include "asyncps_internal/transport/window.h"
#include "asyncps/asyncps.h"

namespace {
[[noreturn]] void fail_here(const std::string& where) { throw std::runtime_error("injected fault: " + where); }

// Whether `dir` holds a checkpoint index (ckpt-<step>.index) yet.
bool has_index(const char* dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("ckpt-") && name.ends_with(".index")) return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  try {
    if (argc != 3 && argc != 4) throw std::runtime_error("usage: fault RANK WHERE [DIR]");
    const int fault_rank = std::atoi(argv[1]);
    const std::string where = argv[2];
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const bool me = rank == fault_rank;
    if (where == "window_scope") {
      asyncps::detail::Window win(MPI_COMM_WORLD, 64, 4, "test");
      asyncps::detail::LockAll lock(win.get());
      if (me) fail_here(where);
      MPI_Barrier(MPI_COMM_WORLD);  // the failing rank never comes
      return 0;
    }
    asyncps::ParamLayout layout;
    layout.add("w", {1000});
    asyncps::Options options;
    options.num_servers = 2;
    const bool pause = where == "pause_in_step" || where == "pause_after_drain" || where == "transport_loop" ||
                       where == "late_start" || where == "server0_stops_in_pull" || where == "no_worker_client";
    if (pause) options.stall_timeout = 1;
    if (where == "halt_keeps_older") {
      options.checkpoint.dir = argv[3];
      options.checkpoint.save_secs = 0.1;
      options.checkpoint.keep = 1;
      options.checkpoint.restore = false;
    }
    if (me && where == "late_start") std::this_thread::sleep_for(std::chrono::seconds(60));
    const auto t0 = std::chrono::steady_clock::now();
    asyncps::Session session(MPI_COMM_WORLD, layout, options);
    if (session.roles().is_server()) {
      const std::size_t n = me && where == "construct" ? layout.size() - 1 : layout.size();
      asyncps::ParameterServer ps(session, std::vector<float>(n));
      if (me && where == "before_serve") throw std::bad_alloc();
      ps.serve([&] {
        if (me && where == "serve_tick" && std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(300))
          fail_here(where);
        if (me && where == "server0_stops_in_pull" && std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(300))
          std::this_thread::sleep_for(std::chrono::seconds(60));  // alive, but never in MPI again
      });
    } else {
      if (me && where == "no_worker_client") std::this_thread::sleep_for(std::chrono::seconds(60));
      asyncps::WorkerClient w(session);
      asyncps::StepLoop steps(w);
      std::vector<float> params(layout.size()), grad(layout.size(), 0.f);
      const std::int64_t limit = where == "pause_after_drain" ? 2000 : where == "after_finish" ? 20 : 1'000'000'000'000;
      while (where == "server0_stops_in_pull") w.pull(params);  // only the watch can end this
      while (where == "transport_loop" && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
        w.pull(params);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        w.push(grad, -0.1f);
      }
      std::optional<int> periodic_seen;  // halt_keeps_older: the step at which a checkpoint index was first seen
      for (int step = 0; where != "transport_loop" && steps.begin_step(params, limit); ++step) {
        if (me && where == "mid_training" && step == 50) fail_here(where);
        if (me && where == "pause_in_step" && step == 50) std::this_thread::sleep_for(std::chrono::seconds(4));
        // (20 steps after the first periodic checkpoint is on disk, not at a time: a start-up that
        // took a second on a loaded machine had left no periodic one before the halt)
        if (me && where == "halt_keeps_older" && step % 10 == 0 && !periodic_seen && has_index(argv[3]))
          periodic_seen = step;
        if (me && where == "halt_keeps_older" && periodic_seen && step == *periodic_seen + 20) steps.request_halt();
        if (where == "halt_keeps_older") std::this_thread::sleep_for(std::chrono::milliseconds(1));
        steps.end_step(grad, -0.1f);
      }
      w.drain();
      if (me && where == "pause_after_drain") std::this_thread::sleep_for(std::chrono::seconds(4));
      w.finish();
      if (me && where == "pause_after_drain") std::printf("pause_after_drain: ok\n");
      if (me && where == "transport_loop") std::printf("transport_loop: ok\n");
      if (where == "after_finish") fail_here(where);  // (every worker)
    }
  } catch (const std::exception& e) {
    asyncps::abort_job(e.what());
  }
  return 0;
}
