#pragma once

#include <stdexcept>

namespace asyncps::mnist {

// Every problem with the MNIST files on disk (missing, malformed, inconsistent).
// what() is a single line that names the file (or directory) and the problem.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace asyncps::mnist
