// Check macros and RAII owners for CUDA runtime, cuDNN and cuBLAS objects (private to lib/nn/gpu).
// A failing call throws Error("<call> failed: <status string> at <file>:<line>"),
// where <call> is the called function's name, e.g.
//   "cudnnConvolutionForward failed: CUDNN_STATUS_BAD_PARAM at gpu_backend.cpp:210".
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include "nn/error.h"

namespace asyncps::nn::gpu {

// expr is the stringified call; its name is what precedes the first '('.
[[noreturn]] inline void throw_call_failed(std::string_view expr, const char* status, const char* file,
                                           int line) {
  std::string_view name = expr.substr(0, expr.find('('));
  while (!name.empty() && (name.back() == ' ' || name.back() == '\n')) name.remove_suffix(1);
  std::string_view f(file);
  if (const auto slash = f.find_last_of('/'); slash != std::string_view::npos) f.remove_prefix(slash + 1);
  throw Error(std::string(name) + " failed: " + (status ? status : "unknown status") +
                           " at " + std::string(f) + ":" + std::to_string(line));
}

}  // namespace asyncps::nn::gpu

#define CUDA_CHECK(expr)                                                                      \
  do {                                                                                        \
    const cudaError_t asyncps_status_ = (expr);                                               \
    if (asyncps_status_ != cudaSuccess)                                                       \
      ::asyncps::nn::gpu::throw_call_failed(#expr, cudaGetErrorString(asyncps_status_), __FILE__, \
                                            __LINE__);                                        \
  } while (0)

#define CUDNN_CHECK(expr)                                                                     \
  do {                                                                                        \
    const cudnnStatus_t asyncps_status_ = (expr);                                             \
    if (asyncps_status_ != CUDNN_STATUS_SUCCESS)                                              \
      ::asyncps::nn::gpu::throw_call_failed(#expr, cudnnGetErrorString(asyncps_status_), __FILE__, \
                                            __LINE__);                                        \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                    \
  do {                                                                                        \
    const cublasStatus_t asyncps_status_ = (expr);                                            \
    if (asyncps_status_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::asyncps::nn::gpu::throw_call_failed(#expr, cublasGetStatusString(asyncps_status_), __FILE__, \
                                            __LINE__);                                        \
  } while (0)

namespace asyncps::nn::gpu {

// unique_ptr owner of an opaque CUDA/cuDNN/cuBLAS handle type H (a pointer) destroyed by Destroy.
// Destruction errors are ignored: a destructor must not throw, and there is nobody to tell.
template <class H, auto Destroy>
struct HandleDeleter {
  void operator()(H h) const noexcept { (void)Destroy(h); }
};
template <class H, auto Destroy>
using Owned = std::unique_ptr<std::remove_pointer_t<H>, HandleDeleter<H, Destroy>>;

using CudnnHandle = Owned<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = Owned<cublasHandle_t, cublasDestroy>;
using Stream = Owned<cudaStream_t, cudaStreamDestroy>;
using Event = Owned<cudaEvent_t, cudaEventDestroy>;
using Graph = Owned<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = Owned<cudaGraphExec_t, cudaGraphExecDestroy>;
using TensorDesc = Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Owned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

// Device (cudaMalloc) or pinned host (cudaMallocHost) array of n T; movable, not copyable.
template <class T, bool Pinned>
class CudaArray {
 public:
  CudaArray() = default;
  explicit CudaArray(std::size_t n) : n_(n) {
    void* p = nullptr;
    const std::size_t bytes = (n == 0 ? 1 : n) * sizeof(T);
    if constexpr (Pinned)
      CUDA_CHECK(cudaMallocHost(&p, bytes));
    else
      CUDA_CHECK(cudaMalloc(&p, bytes));
    p_ = static_cast<T*>(p);
  }
  CudaArray(CudaArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  CudaArray& operator=(CudaArray&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  ~CudaArray() { release(); }

  T* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

 private:
  void release() noexcept {
    if (!p_) return;
    if constexpr (Pinned)
      (void)cudaFreeHost(p_);
    else
      (void)cudaFree(p_);
    p_ = nullptr;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};
template <class T>
using DeviceArray = CudaArray<T, false>;
template <class T>
using PinnedArray = CudaArray<T, true>;

}  // namespace asyncps::nn::gpu
