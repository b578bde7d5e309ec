// defines: asyncps::mnist::DataError
#pragma once

#include "asyncps/error.h"

namespace asyncps::mnist {

// The one error type of asyncps_mnist: every problem with the MNIST files on disk (missing,
// malformed, inconsistent) and with what the reader is asked (a batch size, an index). what()
// is a single line that names the file (or directory, or argument) and the problem. Derived
// from asyncps::Error like the other libraries' errors.
class DataError : public asyncps::Error {
 public:
  using asyncps::Error::Error;
};

}  // namespace asyncps::mnist
