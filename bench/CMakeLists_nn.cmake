# CPU step benchmark of the MNIST CNN backend (include()d from bench/CMakeLists.txt).
add_executable(bench_cpu_step ${CMAKE_CURRENT_LIST_DIR}/bench_cpu_step.cpp)
target_link_libraries(bench_cpu_step PRIVATE asyncps_nn)
