// defines: Session
#include "asyncps/session.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "asyncps/cpu_kernels.h"
#include "asyncps/error.h"
#include "asyncps/log.h"
#include "asyncps/stall_watch.h"
#include "core/check.h"
#include "diagnostics/liveness.h"
#include "runtime/termination.h"
#include "transport/mpi_implementation.h"
#include "transport/string_collectives.h"

namespace asyncps {

namespace {

// What every rank must agree on before any window exists.
// FNV-1a of the checkpoint options: every rank takes part in the collective restore and saves,
// so they must agree on all of them (a rank with another --save_secs or --no_restore would
// enter a different protocol).
std::uint64_t checkpoint_hash(const CheckpointOptions& c) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ull;
  };
  const std::string dir = c.dir.string(), from = c.restart_from.string();
  mix(dir.data(), dir.size() + 1);  // (+1: the terminator separates the fields)
  mix(from.data(), from.size() + 1);
  mix(&c.save_secs, sizeof c.save_secs);
  mix(&c.keep, sizeof c.keep);
  const char restore = c.restore ? 1 : 0;
  mix(&restore, 1);
  return h;
}

std::array<std::uint64_t, 13> fingerprint(const ParamLayout& layout, const Options& o) {
  std::uint64_t stall = 0;
  std::memcpy(&stall, &o.stall_timeout, sizeof stall);
  std::uint32_t dc = 0, power = 0;
  std::memcpy(&dc, &o.dc_lambda, sizeof dc);
  std::memcpy(&power, &o.staleness_lr_power, sizeof power);
  return {layout.hash(), layout.size(), static_cast<std::uint64_t>(o.num_servers),
          static_cast<std::uint64_t>(o.pull), o.chunk_bytes, static_cast<std::uint64_t>(o.mode),
          static_cast<std::uint64_t>(o.staleness),
          o.staleness_lr ? 1 | (o.staleness_lr_relative ? 2 : 0) | (static_cast<std::uint64_t>(power) << 32) : 0,
          static_cast<std::uint64_t>(o.overlap), static_cast<std::uint64_t>(!o.timeline.empty()),
          checkpoint_hash(o.checkpoint), stall, dc};
}

void check_same_everywhere(MPI_Comm comm, const ParamLayout& layout, const Options& options) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const auto mine = fingerprint(layout, options);
  std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(size));
  ASYNCPS_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                                  static_cast<int>(mine.size()), MPI_UINT64_T, comm));
  // Every rank sees the same table, so every rank reaches the same verdict: all throw or none.
  for (int r = 1; r < size; ++r) {
    const std::uint64_t* f = &all[static_cast<std::size_t>(r) * mine.size()];
    const std::uint64_t* f0 = all.data();
    std::ostringstream msg;
    if (f[0] != f0[0] || f[1] != f0[1]) {
      msg << "parameter layout differs between ranks: rank " << r << " has layout hash " << std::hex << f[0]
          << std::dec << " (" << f[1] << " floats), rank 0 has " << std::hex << f0[0] << std::dec << " (" << f0[1]
          << " floats); every rank must build the same model";
    } else if (f[2] != f0[2]) {
      msg << "number of servers differs between ranks: rank " << r << " has " << f[2] << ", rank 0 has " << f0[2];
    } else if (f[5] != f0[5] || f[6] != f0[6] || f[7] != f0[7] || f[12] != f0[12]) {
      msg << "synchronisation mode differs between ranks (rank " << r << " vs rank 0): every rank must be given the same Options::mode, Options::staleness, Options::staleness_lr (its power and relative choice) and Options::dc_lambda";
    } else if (f[10] != f0[10]) {
      msg << "checkpoint options differ between ranks (rank " << r
          << " vs rank 0): every rank must be given the same checkpoint directory, save interval, "
             "number kept, restart checkpoint and restore choice (Options::checkpoint)";
    } else if (f[3] != f0[3] || f[4] != f0[4] || f[8] != f0[8] || f[9] != f0[9] || f[11] != f0[11]) {
      msg << "options differ between ranks (rank " << r << " vs rank 0): every rank must be given the same Options";
    } else {
      continue;
    }
    throw ConfigError(msg.str());
  }
}

// The timeline is written at the job's end: a directory that cannot take it is refused now.
void check_timeline_dir(const std::string& path) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw ConfigError("Options::timeline: " + dir.string() + " is not a directory (the trace is written there at the end)");
  if (::access(dir.c_str(), W_OK) != 0)
    throw ConfigError("Options::timeline: cannot write into " + dir.string() + ": " + std::strerror(errno));
  if (std::filesystem::is_directory(p, ec)) throw ConfigError("Options::timeline: " + path + " is a directory");
}

// The first rank whose options or layout cannot work says why; every rank throws that message
// (a rank that threw alone would leave the others waiting in the next collective).
void agree_valid(MPI_Comm comm, const ParamLayout& layout, const Options& options) {
  std::string problem;
  try {
    validate(options);
    cpu_kernel_level();  // an unusable ASYNCPS_CPU_KERNELS is refused here, on the rank that has it
    if (layout.size() == 0) throw ConfigError("the parameter layout is empty: add at least one tensor");
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && !options.timeline.empty()) check_timeline_dir(options.timeline);  // rank 0 writes it, at the end
  } catch (const ConfigError& e) {
    problem = e.what();
  }
  const std::string first = detail::first_problem(comm, problem);
  if (!first.empty()) throw ConfigError(first);
}

}  // namespace

Session::Session(MPI_Comm comm, ParamLayout layout, Options options)
    : layout_(std::move(layout)), plan_(0, 1), options_(std::move(options)), owner_(std::this_thread::get_id()) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw ConfigError(std::string("Session: MPI is ") + (finalized ? "already finalised" : "not initialised") +
                      " (create an asyncps::MpiEnvironment first)");
  if (comm == MPI_COMM_NULL) throw ConfigError("Session: the communicator is MPI_COMM_NULL");
  // A rank that never arrives (stopped, or stuck before it) ends the job instead of every
  // other rank waiting here forever. (The timeout as given: validated just below.)
  StallWatch watch(setup_watch_timeout(options_.stall_timeout), "the Session's start-up (collective over every rank)");
  ASYNCPS_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  try {
    if (std::string why = detail::launch_problem(size); !why.empty()) throw ConfigError(std::move(why));
    agree_valid(comm_, layout_, options_);
    if (size >= 2) check_same_everywhere(comm_, layout_, options_);  // before roles: S may differ
    roles_ = Roles::make(rank, size, options_.num_servers);
    plan_ = ShardPlan(layout_.size(), options_.num_servers);
    row_plan_ = RowPlan(layout_, options_.num_servers);
    MPI_Comm node = MPI_COMM_NULL;
    ASYNCPS_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    int servers_only = roles_.is_server() ? 1 : 0;  // (every rank on the node a server)
    ASYNCPS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &servers_only, 1, MPI_INT, MPI_MIN, node));
    int worker = roles_.is_server() ? 0 : 1, before = 0;  // workers of lower node rank
    ASYNCPS_MPI_CHECK(MPI_Exscan(&worker, &before, 1, MPI_INT, MPI_SUM, node));
    ASYNCPS_MPI_CHECK(MPI_Allreduce(&worker, &node_workers_, 1, MPI_INT, MPI_SUM, node));
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    node_worker_index_ = worker == 0 ? -1 : node_rank == 0 ? 0 : before;  // (Exscan leaves rank 0's undefined)
    MPI_Comm_free(&node);
    node_no_workers_ = servers_only == 1;
    single_node_ = node_size == size;
    node_ranks_ = node_size;
    // every rank's host, for messages that name a rank (a stall, a restore failure)
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
    ASYNCPS_MPI_CHECK(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                                    MPI_CHAR, comm_));
    for (int r = 0; r < size; ++r) hosts_.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    // (validate() sees the options as given; Auto resolves only now)
    if (rank == 0 && options_.server_progress == ServerProgress::Auto && options_.server_spin_us > 0 &&
        server_progress() == ServerProgress::Poll)
      log(LogLevel::Warning, "Options::server_spin_us has no effect: Options::server_progress Auto polls here (" +
                                 std::string(!rma_needs_target()     ? "one-sided operations complete without the servers"
                                             : layout_.tables().empty() ? "this MPI's operations on one node wait for the servers"
                                                                        : "embedding tables' operations wait for the servers") +
                                 ")");
    detail::hold_termination_signal();  // (last: a constructor that throws holds nothing)
    holds_sigterm_ = true;
  } catch (...) {
    comm_ = MPI_COMM_NULL;  // abandoned, not freed (collective): see detail::unwinding()
    throw;
  }
}

bool Session::rma_needs_target() const noexcept { return detail::mpi_implementation().rma_needs_target(single_node_); }

ServerProgress Session::server_progress() const noexcept {
  if (options_.server_progress != ServerProgress::Auto) return options_.server_progress;
  // Embedding tables move thousands of small operations per step. Open MPI's pt2pt keeps part
  // of them after a server's entry into MPI with no new bytes to wake it, so a woken server
  // stalls the tables' traffic (measured: docs/EMBEDDINGS.md, "server progress").
  if (!layout_.tables().empty() && rma_needs_target()) return ServerProgress::Poll;
  return detail::mpi_implementation().server_polls(single_node_) ? ServerProgress::Poll : ServerProgress::Wake;
}

bool Session::shared_memory_neighbours() const noexcept {
  return node_ranks_ > 1 && detail::mpi_implementation().shared_memory_on_node();
}

int Session::server_poll_us() const noexcept {
  if (options_.server_poll_us >= 0) return options_.server_poll_us;
  if (server_progress() == ServerProgress::Wake && shared_memory_neighbours()) return 1000;
  // a poll that every worker's operation waits for: short (a poll that only services the clock
  // and the heartbeats, where operations complete without the server: long)
  if (server_progress() == ServerProgress::Poll && rma_needs_target()) {
    // A table's rows are thousands of operations a step, each waiting for this server: where no
    // worker shares its node it never sleeps (measured faster than the 50 us poll across hosts:
    // docs/EMBEDDINGS.md)
    if (!layout_.tables().empty() && node_no_workers_) return 0;
    return 50;
  }
  return 10000;
}

const std::string& Session::host(int rank) const {
  static const std::string unknown = "?";
  return rank >= 0 && static_cast<std::size_t>(rank) < hosts_.size() ? hosts_[static_cast<std::size_t>(rank)] : unknown;
}

void Session::check_thread(const char* call) const {
  if (std::this_thread::get_id() != owner_)
    throw ConfigError(std::string(call) +
                      " called from another thread: libasyncps runs under MPI_THREAD_FUNNELED, so only the thread "
                      "that created the Session may call it, its servers and its workers");
}

std::string Session::role_name() const {
  return roles_.is_server() ? "server " + std::to_string(roles_.rank) : "worker " + std::to_string(roles_.worker_index());
}

std::string Session::describe_rank(int rank) const {
  const std::string& host = this->host(rank);
  const std::string role = rank < roles_.num_servers ? "server " + std::to_string(rank)
                                                     : "worker " + std::to_string(rank - roles_.num_servers);
  return role + " (rank " + std::to_string(rank) + " on " + host + ")";
}

Session::~Session() {
  if (holds_sigterm_) detail::release_termination_signal();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized && !detail::unwinding()) MPI_Comm_free(&comm_);
}

}  // namespace asyncps
