// defines: asyncps::nn::Error
// The one error type of the CNN library (asyncps_nn): bad shapes, batch sizes, labels or
// devices, and CUDA/cuDNN/cuBLAS failures. what() is one line naming the call or the argument.
// Derived from asyncps::Error, like every error of the project's libraries (mnist::DataError
// too), so a program catches them all as asyncps::Error.
#pragma once
#include "asyncps/error.h"

namespace asyncps::nn {

class Error : public asyncps::Error {
 public:
  using asyncps::Error::Error;
};

}  // namespace asyncps::nn
