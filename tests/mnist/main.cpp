// main of test_mnist: Catch2's (its implementation: tests/catch_impl.cpp)
#include "catch_run.h"

int main(int argc, char** argv) { return asyncps_test::run_catch(argc, argv); }
