# GPU step benchmark of the MNIST CNN (include()d from bench/CMakeLists.txt). Built in every
# configuration (it uses only the CUDA-free nn/gpu/gpu_backend.h); without CUDA it says so, exit 77.
add_executable(bench_gpu_step ${CMAKE_CURRENT_LIST_DIR}/bench_gpu_step.cpp)
target_link_libraries(bench_gpu_step PRIVATE asyncps_nn)
# Each pass of the fused step timed on its own (CUDA builds only: it calls the kernels directly).
if(ASYNCPS_CUDA_ENABLED)
  add_executable(bench_gpu_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_gpu_kernels.cpp)
  target_link_libraries(bench_gpu_kernels PRIVATE asyncps_nn CUDA::cudart_static)
endif()
