// defines: MpiImplementation (what the library assumes of each MPI), launch_problem
#include "transport/mpi_implementation.h"

#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace asyncps::detail {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "4.1.4" at `pos` (after any spaces, tabs or a 'v') -> major, minor; the version text itself.
std::string read_version(std::string_view text, std::size_t pos, int& major, int& minor) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == ':' || text[pos] == 'v')) ++pos;
  std::size_t end = pos;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  const std::string v(text.substr(pos, end - pos));
  major = std::atoi(v.c_str());
  const std::size_t dot = v.find('.');
  minor = dot == std::string::npos ? 0 : std::atoi(v.c_str() + dot + 1);
  return v;
}

// The value after "key" on its line ("MPICH Device:\tch4:ucx" -> "ch4:ucx").
std::string line_value(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return {};
  std::size_t pos = at + key.size();
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == ':')) ++pos;
  std::size_t end = pos;
  while (end < text.size() && text[end] != '\n' && text[end] != ' ' && text[end] != '\t') ++end;
  return std::string(text.substr(pos, end - pos));
}

// The user's osc selection names pt2pt positively (`--mca osc pt2pt`, OMPI_MCA_osc=pt2pt).
bool osc_pt2pt_chosen() {
  const char* osc = std::getenv("OMPI_MCA_osc");
  return osc && osc[0] != '^' && std::strstr(osc, "pt2pt");
}

long env_long(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : 0;
}

}  // namespace

MpiImplementation parse_library_version(std::string_view text) {
  MpiImplementation m;
  std::string v;
  std::size_t at = std::string_view::npos;
  if ((at = text.find("CRAY MPICH version")) != std::string_view::npos) {  // (before plain MPICH)
    m.family = MpiFamily::Mpich;
    v = read_version(text, at + std::strlen("CRAY MPICH version"), m.major, m.minor);
    m.name = "Cray MPICH " + v;
  } else if (starts_with(text, "Open MPI")) {
    m.family = MpiFamily::OpenMpi;
    v = read_version(text, std::strlen("Open MPI"), m.major, m.minor);
    m.name = "Open MPI " + v;
  } else if ((at = text.find("Intel(R) MPI Library")) != std::string_view::npos) {
    m.family = MpiFamily::Mpich;
    v = read_version(text, at + std::strlen("Intel(R) MPI Library"), m.major, m.minor);
    m.name = "Intel MPI " + v;
  } else if ((at = text.find("MVAPICH2 Version")) != std::string_view::npos ||
             (at = text.find("MVAPICH Version")) != std::string_view::npos) {
    m.family = MpiFamily::Mpich;
    v = read_version(text, text.find("Version", at) + std::strlen("Version"), m.major, m.minor);
    m.name = "MVAPICH " + v;
  } else if ((at = text.find("MPICH Version")) != std::string_view::npos) {
    m.family = MpiFamily::Mpich;
    v = read_version(text, at + std::strlen("MPICH Version"), m.major, m.minor);
    m.name = "MPICH " + v;
  } else {
    const std::size_t end = text.find_first_of(",\n");
    m.name = std::string(text.substr(0, end == std::string_view::npos ? std::min<std::size_t>(text.size(), 60) : end));
    if (m.name.empty()) m.name = "an unknown MPI";
  }
  if (m.family == MpiFamily::Mpich) {
    m.device = line_value(text, "MPICH Device");
    if (!m.device.empty()) m.name += " (" + m.device + ")";
  }
  return m;
}

const MpiImplementation& mpi_implementation() {
  static const MpiImplementation impl = [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(text, &len);
    return parse_library_version(std::string_view(text, static_cast<std::size_t>(len)));
  }();
  return impl;
}

void MpiImplementation::prepare_environment() const {
  // Open MPI 4: Debian sets `osc = ^ucx,pt2pt` in openmpi-mca-params.conf, which leaves no
  // one-sided component that works between hosts on TCP; an environment variable overrides that
  // file. (Open MPI 5 has no pt2pt, and excluding ucx there would take InfiniBand's away.)
  if (family == MpiFamily::OpenMpi && major < 5) setenv("OMPI_MCA_osc", "^ucx", /*overwrite=*/0);
}

bool MpiImplementation::rma_needs_target(bool single_node) const {
  switch (family) {
    case MpiFamily::OpenMpi: return !single_node || osc_pt2pt_chosen();
    case MpiFamily::Mpich: return true;  // ch4's accumulates are active messages, on one node too
    case MpiFamily::Other: break;
  }
  return true;
}

bool MpiImplementation::finalize_may_hang_across_nodes() const {
  if (family != MpiFamily::Mpich || device.rfind("ch4:ucx", 0) != 0) return false;
  return name.rfind("MPICH ", 0) == 0 && (major < 4 || (major == 4 && minor < 2));
}

bool MpiImplementation::server_polls(bool single_node) const {
  if (!rma_needs_target(single_node)) return true;
  // (MPICH with MPIR_CVAR_NOLOCAL=1 sends even on one node through its network module: as between hosts)
  return single_node && family == MpiFamily::Mpich && shared_memory_on_node();
}

bool MpiImplementation::shared_memory_on_node() const {
  if (family == MpiFamily::OpenMpi) {
    const char* btl = std::getenv("OMPI_MCA_btl");
    if (!btl || !*btl) return true;
    const bool has_sm = std::strstr(btl, "vader") || std::strstr(btl, "sm");
    return btl[0] == '^' ? !has_sm : has_sm;
  }
  if (family == MpiFamily::Mpich) return env_long("MPIR_CVAR_NOLOCAL") == 0;
  return true;
}

std::string MpiImplementation::window_failure_hint() const {
  switch (family) {
    case MpiFamily::OpenMpi:
      if (major < 5)
        return name + " needs its pt2pt one-sided component between hosts on TCP: pass --mca osc ^ucx to mpirun "
                      "or set OMPI_MCA_osc=^ucx (on InfiniBand or RoCE: --mca pml ucx --mca osc ucx)";
      return name + " has no osc pt2pt: on TCP set OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self,sm OMPI_MCA_osc=sm,rdma "
                    "(5.0.9 or later); on InfiniBand or RoCE --mca pml ucx --mca osc ucx";
    case MpiFamily::Mpich:
      return name + ": check that UCX (or libfabric) reaches every host: on TCP set UCX_TLS=tcp,self,sm and "
                    "UCX_NET_DEVICES to the interface";
    case MpiFamily::Other: break;
  }
  return name + " could not create a one-sided window across these ranks";
}

namespace {
// The tasks of the srun step this process is one of (SLURM_PROCID marks a task srun started;
// SLURM_STEP_NUM_TASKS counts the step's tasks), or 0. An sbatch script's own shell is a step of
// one task whatever the allocation's SLURM_NTASKS, so that alone is never taken for the count.
long slurm_step_tasks() { return std::getenv("SLURM_PROCID") ? env_long("SLURM_STEP_NUM_TASKS") : 0; }
}  // namespace

std::string launch_problem_before_init() {
  const long tasks = slurm_step_tasks();
  if (tasks <= 1) return {};
  // what a process-management interface leaves in a task's environment: srun --mpi=pmix (PMIX_),
  // --mpi=pmi2 (PMI_FD, PMI_RANK), or a launcher run inside the step (mpirun, hydra)
  for (const char* wired : {"PMIX_RANK", "PMI_RANK", "PMI_FD", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(wired)) return {};
  const MpiImplementation& mpi = mpi_implementation();
  return "Slurm started " + std::to_string(tasks) + " tasks (SLURM_STEP_NUM_TASKS=" + std::to_string(tasks) +
         ") without a process-management interface for MPI (srun --mpi=none, or the cluster's MpiDefault), so each "
         "would start alone as rank 0 of 1: launch with srun --mpi=" +
         (mpi.family == MpiFamily::OpenMpi ? "pmix" : mpi.family == MpiFamily::Mpich ? "pmi2" : "pmix or --mpi=pmi2") +
         " (this program is built with " + mpi.name + "; `srun --mpi=list` shows what the cluster offers)";
}

std::string launch_problem(int world_size) {
  if (world_size != 1) return {};
  const MpiImplementation& mpi = mpi_implementation();
  const long slurm = slurm_step_tasks();
  if (slurm > 1)
    return "this rank is alone (rank 0 of 1) although Slurm started " + std::to_string(slurm) +
           " tasks (SLURM_STEP_NUM_TASKS=" + std::to_string(slurm) + "): " + mpi.name +
           " is not wired to Slurm's process management; launch with srun --mpi=pmix (Open MPI) or srun "
           "--mpi=pmi2 (MPICH and its derivatives), or with the mpirun of the MPI this program was built with";
  const long ompi = env_long("OMPI_COMM_WORLD_SIZE"), pmi = env_long("PMI_SIZE");
  const long other = mpi.family == MpiFamily::OpenMpi ? pmi : ompi;  // another MPI's launcher
  if (other > 1)
    return "this rank is alone (rank 0 of 1) although its launcher started " + std::to_string(other) + " tasks (" +
           (mpi.family == MpiFamily::OpenMpi ? "PMI_SIZE" : "OMPI_COMM_WORLD_SIZE") + "=" + std::to_string(other) +
           "): this program is built with " + mpi.name + ", the launcher belongs to another MPI; launch it with " +
           (mpi.family == MpiFamily::OpenMpi ? "Open MPI's mpirun" : "that MPI's mpiexec (MPICH: mpiexec.mpich)");
  return {};
}

void abort_world(int exit_code) noexcept {
  std::fflush(nullptr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kAbortSettleMs));
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
  std::_Exit(exit_code);
}

}  // namespace asyncps::detail
