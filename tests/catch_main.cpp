// defines: main() for the single-process Catch2 tests (Catch's implementation: catch_impl.cpp)
#include "catch_run.h"

int main(int argc, char** argv) { return asyncps_test::run_catch(argc, argv); }
