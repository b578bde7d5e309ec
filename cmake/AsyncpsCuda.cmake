# Decides ASYNCPS_CUDA_ENABLED from ASYNCPS_WITH_CUDA (AUTO|ON|OFF).
# AUTO: enabled when nvcc is found (check_language) and cuDNN + cuBLAS are found.
# ON:   the same, but a missing piece is a configure error.
set(ASYNCPS_CUDA_ENABLED OFF)
string(TOUPPER "${ASYNCPS_WITH_CUDA}" _asyncps_cuda_mode)
if(NOT _asyncps_cuda_mode STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  set(_asyncps_cuda_missing "")
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      # The user's CMAKE_CUDA_ARCHITECTURES (or CUDAARCHS) decides; by default machine code for
      # the data-centre and desktop generations CUDA 13 supports (Turing T4, Ampere A100/A10,
      # Hopper H100/H200, Blackwell B200 and RTX 50) plus PTX of the newest, which the driver
      # compiles for anything later.
      set(CMAKE_CUDA_ARCHITECTURES "75-real;80-real;86-real;90-real;100-real;120-real;120-virtual")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    set(CUDNN_ROOT "" CACHE PATH "Where cuDNN lives (include/ and lib/), if not beside CUDA")
    find_path(CUDNN_INCLUDE_DIR cudnn.h
      HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
      PATH_SUFFIXES include)
    find_library(CUDNN_LIBRARY cudnn
      HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR}
      PATH_SUFFIXES lib lib64)
    if(NOT CUDAToolkit_FOUND)
      list(APPEND _asyncps_cuda_missing "CUDA toolkit")
    endif()
    if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
      list(APPEND _asyncps_cuda_missing "cuDNN (set CUDNN_ROOT)")
    endif()
  else()
    list(APPEND _asyncps_cuda_missing "nvcc")
  endif()
  if(_asyncps_cuda_missing)
    if(_asyncps_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "ASYNCPS_WITH_CUDA=ON but not found: ${_asyncps_cuda_missing}")
    endif()
    message(STATUS "GPU backend not built: missing ${_asyncps_cuda_missing}")
  else()
    set(ASYNCPS_CUDA_ENABLED ON)
    add_library(asyncps_cudnn INTERFACE IMPORTED)
    target_include_directories(asyncps_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(asyncps_cudnn INTERFACE ${CUDNN_LIBRARY})
  endif()
endif()
