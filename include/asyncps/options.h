// defines: asyncps::Options, asyncps::CheckpointOptions, asyncps::PullMethod, asyncps::Mode,
//          asyncps::ServerProgress, asyncps::validate(Options), asyncps::validate(CheckpointOptions)
// What a Session is given: every option of the library, its default and its range
// (validate). Session's constructor validates them and checks that every rank was given the
// same (asyncps/session.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>


namespace asyncps {

// Where and how often the servers save (asyncps/checkpoint.h: the files, reading them back).
struct CheckpointOptions {
  std::filesystem::path dir;   // empty: the job keeps no checkpoints
  double save_secs = 60;       // server 0 saves this often when the step or rows moved (0: only at the end)
  int keep = 5;                // newest checkpoints kept
  std::filesystem::path restart_from;  // an index file to start from; empty: the newest valid in dir
  bool restore = true;         // start from the newest valid checkpoint in dir, if there is one
};

// Throws ConfigError naming the field ("Options::checkpoint.keep must be ..."), or returns:
// keep in [1, limits::kMaxCheckpointsKept] (the final save is one of those kept: 0 would delete
// it right after writing it), save_secs in [0, 1e9], paths without NUL bytes, and save_secs and
// keep at their defaults when dir is empty (nothing is saved: they would change nothing). Whether
// restart_from can be read is the restore's to say (only rank 0 reads it, other hosts may not
// see it): a collective CheckpointError naming it. Session's constructor calls it (through
// validate(const Options&)). Defined in validate.cpp.
void validate(const CheckpointOptions& options);

enum class PullMethod {
  GetAccumulate,  // MPI_Get_accumulate(MPI_NO_OP): element-wise atomic reads (default)
  Get,            // MPI_Get: faster on some transports, elements may mix generations
};

// How workers' updates are combined (see docs/ARCHITECTURE.md, "Modes").
enum class Mode {
  Async,  // Hogwild: each update is applied as it arrives; nobody waits (default)
  Sync,   // every round, the mean of all W workers' updates is applied once; workers wait for it
  Ssp,    // stale-synchronous: a worker at clock c waits while the slowest clock is below c - staleness
};

// How a server lets one-sided operations complete (see docs/ARCHITECTURE.md "Server progress").
enum class ServerProgress {
  Auto,  // chosen by the Session from the MPI implementation, the node and the layout: Poll where
         // one-sided operations complete without the server, Wake where they need it between
         // hosts, Poll where the implementation or the layout's tables need it (the cases:
         // docs/ARCHITECTURE.md "Server progress")
  Poll,  // enter MPI every server_poll_us, sleeping in between (0: never sleeps)
  Wake,  // sleep until bytes arrive on one of the process's sockets (TCP), at most
         // server_poll_us; keep entering MPI for server_spin_us after the last arrival
};

struct Options {
  int num_servers = 1;            // S: ranks [0, S) serve the arena
  Mode mode = Mode::Async;
  int staleness = 0;              // SSP bound s (Mode::Ssp only)
  // Staleness-aware learning rate, async/ssp: each update is scaled by 1 / max(1, tau)^power.
  // power 1 is Zhang et al.'s 1/tau (IJCAI 2016), which collapses when tau ~ W - 1 (figures in
  // docs/CONVERGENCE.md); 0.5, 1/sqrt(tau), is the default.
  bool staleness_lr = false;
  float staleness_lr_power = 0.5f;  // in (0, 2]; only with staleness_lr
  // With staleness_lr: scale by ((1 + mean tau) / (1 + tau))^power instead, mean tau the job's,
  // W - 1 (Little's law: W updates in flight; W with overlap). The mean scale is about 1: only
  // updates staler than the job's mean are damped (a straggler's) and fresher ones lifted. It is
  // Zhang et al.'s rule with the base rate raised by the mean staleness, as they tune it.
  bool staleness_lr_relative = false;
  // Delay-compensated updates (DC-ASGD, Zheng et al., ICML 2017), async/ssp: end_step reads the
  // arena again and pushes g + dc_lambda * g*g*(w_now - w_read) instead of g. 0: off.
  float dc_lambda = 0;
  // async only: the next step's claim and pull are prefetched during this compute (one step more
  // staleness). (Every mode but sync already sends a step's push during the next compute.)
  bool overlap = false;
  PullMethod pull = PullMethod::GetAccumulate;
  ServerProgress server_progress = ServerProgress::Auto;
  // The longest a server sleeps between entries into MPI. -1 (auto): chosen by the Session,
  // long where a poll only serves the clock and the heartbeats, short where every worker's
  // operation waits for it (the cases: docs/ARCHITECTURE.md "Server progress"). Unless the
  // server is woken (Wake), at most the heartbeat interval, min(1 s, stall_timeout / 4).
  int server_poll_us = -1;
  int server_spin_us = 0;
  // Workers, when the transport needs the target (Wake): spin this long on an outstanding
  // claim/pull, then sleep until bytes arrive (frees the core for ranks that share it).
  int wait_spin_us = 50;
  // The longest a waiting worker sleeps between looks at its operations, in microseconds, where
  // it sleeps (Wake). -1 (auto): 100 where a rank on its node answers over shared memory (which
  // wakes no socket), else 1000. At most the heartbeat interval, min(1 s, stall_timeout / 4).
  int wait_max_sleep_us = -1;
  // Non-empty: every rank records its spans (pull, compute, push, waits, server activity,
  // saves) and rank 0 writes them here at the end as Chrome trace-event JSON (Perfetto).
  std::string timeline = {};
  std::size_t chunk_bytes = 1u << 20;  // large pushes/pulls are split into pieces of this size
  // Liveness (see docs/ARCHITECTURE.md "Failure"): every rank sends a heartbeat about every
  // min(1 s, stall_timeout / 4); a rank silent for this many seconds is reported by rank and
  // host, server 0 saves a checkpoint if every server is live, and the job ends with StallError
  // on the rank that noticed. It must exceed the longest compute step and the longest save.
  // 0: off.
  double stall_timeout = 60;
  CheckpointOptions checkpoint = {};  // where and how often servers save (default: never)
};

// Throws ConfigError naming the first field out of range or without effect
// ("Options::stall_timeout must be ..."), or returns. Session's constructor calls it.
void validate(const Options& options);

}  // namespace asyncps
