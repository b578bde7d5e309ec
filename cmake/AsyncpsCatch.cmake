# asyncps_catch_impl: Catch2 v2's implementation (tests/catch_impl.cpp), one object for every test
# program of the build; the mains (tests/catch_main.cpp, tests/mpi_catch_main.cpp, the nn and
# mnist ones) run it through catch_run.h (Catch declares its Session only beside its implementation) and link this.
# Included by tests/, tests/nn and tests/mnist (the last two also from tests/standalone, the build
# without MPI): the first include defines it, in its directory, whose build flags it gets.
if(NOT TARGET asyncps_catch_impl)
  add_library(asyncps_catch_impl STATIC ${CMAKE_CURRENT_LIST_DIR}/../tests/catch_impl.cpp)
  target_link_libraries(asyncps_catch_impl PUBLIC Catch2::Catch2)
  target_include_directories(asyncps_catch_impl PUBLIC ${CMAKE_CURRENT_LIST_DIR}/../tests)  # catch_run.h
endif()
