// defines: Session
#include "asyncps/session.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "asyncps/cpu_kernels.h"
#include "asyncps/error.h"
#include "asyncps/log.h"
#include "asyncps/option_choices.h"
#include "asyncps/stall_watch.h"
#include "core/check.h"
#include "core/job_facts.h"
#include "core/log_origin.h"
#include "diagnostics/liveness.h"
#include "runtime/progress_policy.h"
#include "runtime/rank_agreement.h"
#include "runtime/termination.h"
#include "transport/mpi_implementation.h"
#include "transport/string_collectives.h"

namespace asyncps {

namespace {

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

// The trace replaces its file at the job's end: never a file of the checkpoints (ckpt-*, the
// lock, an earlier run's folder) in the checkpoint directory or beside the restart checkpoint.
void check_timeline_spares_checkpoints(const std::string& path, const CheckpointOptions& c) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path trace = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return;  // (check_timeline_dir says what is wrong with it)
  const std::string name = trace.filename().string();
  if (!name.starts_with("ckpt-") && name != "asyncps.lock" && !name.starts_with("earlier-run-")) return;
  const auto same_dir = [&](const fs::path& dir, const char* option) {
    std::error_code e;
    if (dir.empty() || trace.parent_path() != fs::weakly_canonical(fs::absolute(dir, e), e) || e) return;
    throw ConfigError("Options::timeline " + path + " would replace a file of the checkpoints in " + option +
                      " (ckpt-*, asyncps.lock and earlier-run-* are theirs): name another file");
  };
  same_dir(c.dir, "Options::checkpoint.dir");
  same_dir(c.restart_from.parent_path().empty() && !c.restart_from.empty() ? fs::path(".") : c.restart_from.parent_path(),
           "the folder of Options::checkpoint.restart_from");
}

// The first rank whose options or layout cannot work says why; every rank throws that message
// (a rank that threw alone would leave the others waiting in the next collective).
void agree_valid(MPI_Comm comm, const ParamLayout& layout, const Options& options) {
  std::string problem;
  try {
    validate(options);
    cpu_kernel_level();  // an unusable ASYNCPS_CPU_KERNELS is refused here, on the rank that has it
    check_log_level_environment();  // and an ASYNCPS_LOG_LEVEL that is no level
    if (layout.size() == 0)
      throw ConfigError(layout.tables().empty()
                            ? "the parameter layout is empty: add at least one tensor"
                            : "the parameter layout has " + std::to_string(layout.tables().size()) +
                                  " embedding table(s) but no tensor: add at least one (a model of tables "
                                  "alone is not supported: the arena holds its dense parameters)");
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && !options.timeline.empty()) {  // rank 0 writes it, at the end
      check_timeline_dir(options.timeline);
      check_timeline_spares_checkpoints(options.timeline, options.checkpoint);
    }
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
  detail::set_log_origin();
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
    if (size >= 2) detail::check_same_everywhere(comm_, layout_, options_);  // before roles: S may differ
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
    // Wake's settings where Auto chose to poll would do nothing: refused as validate() refuses
    // them beside Poll (each rank's own options: agreed on, every rank throws)
    const detail::ProgressChoice progress = detail::progress_choice(*this);
    std::string unused;
    if (options_.server_progress == ServerProgress::Auto && progress.progress == ServerProgress::Poll) {
      const Options defaults;
      const char* given = options_.server_spin_us != defaults.server_spin_us       ? "Options::server_spin_us"
                          : options_.wait_spin_us != defaults.wait_spin_us         ? "Options::wait_spin_us"
                          : options_.wait_max_sleep_us != defaults.wait_max_sleep_us ? "Options::wait_max_sleep_us"
                                                                                   : nullptr;
      if (given)
        unused = std::string(given) + " has no effect: Options::server_progress Auto polls here (" +
                 (!rma_needs_target()         ? "one-sided operations complete without the servers"
                  : layout_.tables().empty() ? "this MPI's operations on one node wait for the servers"
                                             : "embedding tables' operations wait for the servers") +
                 "), where it is Wake's: leave it out, or set Options::server_progress Wake";
    }
    if (const std::string first = detail::first_problem(comm_, unused); !first.empty()) throw ConfigError(first);
    if (log_enabled(LogLevel::Debug))
      log(LogLevel::Debug, "Session: " + role_name() + " of " + std::to_string(roles_.num_servers) + " server(s) and " +
                               std::to_string(roles_.num_workers()) + " worker(s); " +
                               (single_node_ ? "one node" : "several nodes") + ", " + std::to_string(node_ranks_) +
                               " rank(s) on this one; " + detail::mpi_implementation().name +
                               "; server progress " + name_of(progress.progress) + ", longest sleep " +
                               std::to_string(progress.poll_us) + " us; cpu kernels " + cpu_kernel_level());
    detail::hold_termination_signal();  // (last: a constructor that throws holds nothing)
    holds_sigterm_ = true;
  } catch (...) {
    comm_ = MPI_COMM_NULL;  // abandoned, not freed (collective): see detail::unwinding()
    throw;
  }
}

bool Session::rma_needs_target() const noexcept { return detail::mpi_implementation().rma_needs_target(single_node_); }

const std::string& Session::host(int rank) const {
  static const std::string unknown = "?";
  return rank >= 0 && static_cast<std::size_t>(rank) < hosts_.size() ? hosts_[static_cast<std::size_t>(rank)] : unknown;
}

std::string Session::role_name() const {
  return roles_.is_server() ? "server " + std::to_string(roles_.rank) : "worker " + std::to_string(roles_.worker_index());
}

std::string Session::describe_rank(int rank) const { return detail::describe_rank(roles_, rank, host(rank)); }

Session::~Session() {
  if (holds_sigterm_) detail::release_termination_signal();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized && !detail::unwinding()) MPI_Comm_free(&comm_);
}

}  // namespace asyncps
