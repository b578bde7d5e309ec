// defines: main() for MPI tests written with Catch2
// Every rank runs the same test cases; the process exits non-zero on a rank whose checks
// failed, and mpirun reports that. Tests use CHECK (not REQUIRE) around collectives so that a
// failing rank still reaches the same MPI calls as the others instead of leaving them waiting.
// An exception no check expected (a StallError, an MpiError) leaves its rank's test case
// early, away from the collectives the other ranks wait in: it ends the job at once, with its
// message, through asyncps::abort_job (as a program following USING.md does), never a hang
// until the test's timeout.
// (Catch's implementation: catch_impl.cpp; the listener's interfaces are declared for this file)
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <mpi.h>

#include <cstdio>
#include <string>

#include "asyncps/mpi_environment.h"
#include "catch_run.h"

namespace {

struct AbortOnUnexpectedException : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override { test_case_ = info.name; }
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& r = stats.assertionResult;
    if (r.getResultType() == Catch::ResultWas::ThrewException)
      asyncps::abort_job(("test case \"" + test_case_ + "\" threw (at " + r.getSourceInfo().file + ":" +
                          std::to_string(r.getSourceInfo().line) + "): " + r.getMessage())
                             .c_str());
    return true;
  }
  std::string test_case_;
};

}  // namespace

CATCH_REGISTER_LISTENER(AbortOnUnexpectedException)

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int failed = asyncps_test::run_catch(argc, argv);
  // Agree on the outcome so that every rank exits the same way.
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed && rank == 0) std::fprintf(stderr, "some rank failed its checks\n");
  return any_failed ? 1 : 0;
}
