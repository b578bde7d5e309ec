// defines: asyncps::nn::Error
// The one error type of the CNN library (asyncps_nn): bad shapes, batch sizes, labels or
// devices, and CUDA/cuDNN/cuBLAS failures. what() is one line naming the call or the argument.
// A std::runtime_error (the library needs neither libasyncps nor MPI), so a program catches it,
// like mnist::DataError and libasyncps's asyncps::Error, as std::exception.
#pragma once
#include <stdexcept>

namespace asyncps::nn {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace asyncps::nn
