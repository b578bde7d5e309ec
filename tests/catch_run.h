// defines: asyncps_test::run_catch
// Catch2 v2 declares Catch::Session only beside its implementation (tests/catch_impl.cpp, compiled
// once for every test program), so the mains run their session through this.
#pragma once

namespace asyncps_test {

// Catch::Session: applies the command line (its error code if it is refused), then runs the test
// cases; returns the number of failed ones (as Catch's own main does).
int run_catch(int argc, char** argv);

}  // namespace asyncps_test
