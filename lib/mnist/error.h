// defines: asyncps::mnist::DataError
#pragma once

#include <stdexcept>

namespace asyncps::mnist {

// The one error type of asyncps_mnist: every problem with the MNIST files on disk (missing,
// malformed, inconsistent) and with what the reader is asked (a batch size, an index). what()
// is a single line that names the file (or directory, or argument) and the problem. A
// std::runtime_error (the library needs neither libasyncps nor MPI), so a program catches it,
// like nn::Error and libasyncps's asyncps::Error, as std::exception.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace asyncps::mnist
