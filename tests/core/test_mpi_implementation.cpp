// Proves: the library tells each MPI implementation apart from its MPI_Get_library_version text
// (Open MPI 4 and 5, MPICH with its device, Intel MPI, MVAPICH, Cray MPICH, anything else), and
// draws from that, in one place, what it assumes of it: the settings made before MPI_Init, whether
// one-sided operations need the target, how a server makes progress, the hint of a failed window;
// and that a rank started alone under Slurm's srun or another MPI's launcher is named.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "asyncps_internal/transport/mpi_implementation.h"

using asyncps::detail::MpiFamily;
using asyncps::detail::parse_library_version;

namespace {
// The texts as the implementations print them (the first lines; MPICH's go on for 20 more).
constexpr const char* kOpenMpi4 = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
constexpr const char* kOpenMpi5 =
    "Open MPI v5.0.5, package: Open MPI builder@host Distribution, ident: 5.0.5, repo rev: v5.0.5, Jul 22, 2024";
constexpr const char* kMpich =
    "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\nMPICH ABI:\t14:2:2\n"
    "MPICH Device:\tch4:ucx\nMPICH configure:\t--build=x86_64-linux-gnu --prefix=/usr\n";
constexpr const char* kIntel = "Intel(R) MPI Library 2021.9 for Linux* OS\n";
constexpr const char* kMvapich = "MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date :\tWed March 02 22:00:00 EST 2022\n";
constexpr const char* kCray =
    "MPI VERSION    : CRAY MPICH version 8.1.27.10 (ANL base 3.4a2)\nMPI BUILD INFO : Wed Sep 06 1:35 2023 (git hash 0e3e3e3)\n";

struct EnvVar {  // sets (or unsets, value nullptr) one variable for a scope, then restores it
  std::string name;
  bool had = false;
  std::string old;
  EnvVar(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) had = true, old = v;
    if (value) setenv(n, value, 1);
    else unsetenv(n);
  }
  ~EnvVar() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};
}  // namespace

TEST_CASE("each implementation is named, with its family and version", "[mpi_implementation]") {
  auto m = parse_library_version(kOpenMpi4);
  CHECK(m.family == MpiFamily::OpenMpi);
  CHECK(m.name == "Open MPI 4.1.4");
  CHECK((m.major == 4 && m.minor == 1));
  m = parse_library_version(kOpenMpi5);
  CHECK((m.family == MpiFamily::OpenMpi && m.major == 5 && m.minor == 0));
  m = parse_library_version(kMpich);
  CHECK(m.family == MpiFamily::Mpich);
  CHECK(m.name == "MPICH 4.0.2 (ch4:ucx)");
  CHECK(m.device == "ch4:ucx");
  CHECK((m.major == 4 && m.minor == 0));
  m = parse_library_version(kIntel);
  CHECK((m.family == MpiFamily::Mpich && m.name == "Intel MPI 2021.9" && m.major == 2021 && m.minor == 9));
  m = parse_library_version(kMvapich);
  CHECK((m.family == MpiFamily::Mpich && m.name == "MVAPICH 2.3.7" && m.major == 2 && m.minor == 3));
  m = parse_library_version(kCray);  // (says "MPICH" too: Cray's name must win)
  CHECK((m.family == MpiFamily::Mpich && m.name == "Cray MPICH 8.1.27.10" && m.major == 8 && m.minor == 1));
  m = parse_library_version("Some MPI 1.0, built yesterday\nmore");
  CHECK(m.family == MpiFamily::Other);
  CHECK(m.name == "Some MPI 1.0");
  CHECK(parse_library_version("").name == "an unknown MPI");
}

TEST_CASE("whether one-sided operations need the target, and how a server makes progress", "[mpi_implementation]") {
  const EnvVar no_osc("OMPI_MCA_osc", nullptr);
  const auto ompi = parse_library_version(kOpenMpi4);
  CHECK_FALSE(ompi.rma_needs_target(/*single_node=*/true));  // osc rdma over shared memory
  CHECK(ompi.rma_needs_target(false));                         // pt2pt between hosts
  CHECK(ompi.server_polls(true));                              // nothing to wake: a slow poll
  CHECK_FALSE(ompi.server_polls(false));                       // between hosts: woken by messages
  {
    const EnvVar pt2pt("OMPI_MCA_osc", "pt2pt");  // the user forced pt2pt on one node
    CHECK(ompi.rma_needs_target(true));
    CHECK_FALSE(ompi.server_polls(true));
  }
  {
    const EnvVar excluded("OMPI_MCA_osc", "^ucx,pt2pt");  // excluding pt2pt is not choosing it
    CHECK_FALSE(ompi.rma_needs_target(true));
  }
  const auto mpich = parse_library_version(kMpich);
  CHECK(mpich.rma_needs_target(true));  // ch4 accumulates are messages, on one node too
  CHECK(mpich.rma_needs_target(false));
  CHECK(mpich.server_polls(true));
  CHECK_FALSE(mpich.server_polls(false));
  {
    const EnvVar nolocal("MPIR_CVAR_NOLOCAL", "1");  // everything through the network module
    CHECK_FALSE(mpich.shared_memory_on_node());
    CHECK_FALSE(mpich.server_polls(true));
  }
  const auto other = parse_library_version("Some MPI 1.0");
  CHECK(other.rma_needs_target(true));  // the safe assumption
  CHECK_FALSE(other.server_polls(true));
}

TEST_CASE("MPI_Finalize is skipped only where it can hang: MPICH before 4.2 on ch4:ucx", "[mpi_implementation]") {
  CHECK(parse_library_version(kMpich).finalize_may_hang_across_nodes());
  std::string fixed = kMpich;
  fixed.replace(fixed.find("4.0.2"), 5, "4.2.0");
  CHECK_FALSE(parse_library_version(fixed).finalize_may_hang_across_nodes());
  std::string ofi = kMpich;
  ofi.replace(ofi.find("ch4:ucx"), 7, "ch4:ofi");
  CHECK_FALSE(parse_library_version(ofi).finalize_may_hang_across_nodes());
  for (const char* text : {kOpenMpi4, kOpenMpi5, kIntel, kCray})
    CHECK_FALSE(parse_library_version(text).finalize_may_hang_across_nodes());
}

TEST_CASE("settings before MPI_Init: Open MPI 4's osc, and never over the user's", "[mpi_implementation]") {
  {
    const EnvVar unset("OMPI_MCA_osc", nullptr);
    parse_library_version(kOpenMpi4).prepare_environment();
    REQUIRE(std::getenv("OMPI_MCA_osc"));
    CHECK(std::string(std::getenv("OMPI_MCA_osc")) == "^ucx");
  }
  {
    const EnvVar users("OMPI_MCA_osc", "ucx");
    parse_library_version(kOpenMpi4).prepare_environment();
    CHECK(std::string(std::getenv("OMPI_MCA_osc")) == "ucx");
  }
  for (const char* text : {kOpenMpi5, kMpich, kIntel}) {  // (Open MPI 5: would take osc ucx away)
    const EnvVar unset("OMPI_MCA_osc", nullptr);
    parse_library_version(text).prepare_environment();
    CHECK(std::getenv("OMPI_MCA_osc") == nullptr);
  }
}

TEST_CASE("a failed window's hint says what to set on that implementation", "[mpi_implementation]") {
  const std::string ompi4 = parse_library_version(kOpenMpi4).window_failure_hint();
  CHECK_THAT(ompi4, Catch::Contains("Open MPI 4.1.4") && Catch::Contains("OMPI_MCA_osc=^ucx"));
  const std::string ompi5 = parse_library_version(kOpenMpi5).window_failure_hint();
  CHECK_THAT(ompi5, Catch::Contains("no osc pt2pt") && Catch::Contains("osc ucx") && Catch::Contains("btl=tcp,self,sm"));
  const std::string mpich = parse_library_version(kMpich).window_failure_hint();
  CHECK_THAT(mpich, Catch::Contains("MPICH 4.0.2") && Catch::Contains("UCX_TLS=tcp,self,sm"));
}

TEST_CASE("a rank started alone by a launcher that started more is named, with what to do", "[mpi_implementation]") {
  const EnvVar a("SLURM_PROCID", nullptr), b("SLURM_NTASKS", nullptr), c("SLURM_STEP_NUM_TASKS", nullptr),
      d("PMI_SIZE", nullptr), e("OMPI_COMM_WORLD_SIZE", nullptr), f("PMIX_RANK", nullptr), g("PMI_RANK", nullptr),
      h("PMI_FD", nullptr), i("MPI_LOCALNRANKS", nullptr);
  using asyncps::detail::launch_problem;
  using asyncps::detail::launch_problem_before_init;
  CHECK(launch_problem(1).empty());  // a singleton on its own: fine
  {
    const EnvVar procid("SLURM_PROCID", "0"), step("SLURM_STEP_NUM_TASKS", "4");
    const std::string why = launch_problem(1);
    CHECK_THAT(why, Catch::Contains("Slurm started 4 tasks") && Catch::Contains("srun --mpi="));
    CHECK(launch_problem(4).empty());  // wired: the world has the tasks
  }
  {
    const EnvVar procid("SLURM_PROCID", "0"), step("SLURM_STEP_NUM_TASKS", "1"), ntasks("SLURM_NTASKS", "8");
    CHECK(launch_problem(1).empty());  // an sbatch script's shell: one task of an allocation of 8
    CHECK(launch_problem_before_init().empty());
  }
  {
    const EnvVar ntasks("SLURM_NTASKS", "8");  // salloc's shell, not a task srun started
    CHECK(launch_problem(1).empty());
    CHECK(launch_problem_before_init().empty());
  }
  {  // before MPI_Init: srun --mpi=none leaves no PMI in the environment
    const EnvVar procid("SLURM_PROCID", "1"), step("SLURM_STEP_NUM_TASKS", "3");
    CHECK_THAT(launch_problem_before_init(), Catch::Contains("Slurm started 3 tasks") && Catch::Contains("srun --mpi="));
    for (const char* wired : {"PMIX_RANK", "PMI_FD", "OMPI_COMM_WORLD_SIZE"}) {
      const EnvVar pmi(wired, "1");
      CHECK(launch_problem_before_init().empty());
    }
  }
  const bool ompi = asyncps::detail::mpi_implementation().family == MpiFamily::OpenMpi;
  {
    const EnvVar foreign(ompi ? "PMI_SIZE" : "OMPI_COMM_WORLD_SIZE", "3");  // the other MPI's launcher
    CHECK_THAT(launch_problem(1), Catch::Contains("launcher belongs to another MPI"));
  }
}
