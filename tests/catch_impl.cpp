// defines: Catch2 v2's implementation and asyncps_test::run_catch, compiled once for every test
// program (asyncps_catch_impl, cmake/AsyncpsCatch.cmake); each main includes <catch2/catch.hpp>
// without CATCH_CONFIG_MAIN or _RUNNER. (Compiled in each of five mains, Catch's implementation
// cost 30 s of a Release build and 2.5 min of a sanitizer build each time.)
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_run.h"

int asyncps_test::run_catch(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  return session.run();
}
