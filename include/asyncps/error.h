// defines: asyncps::Error, asyncps::MpiError, asyncps::CheckpointError, asyncps::ConfigError,
//          asyncps::StallError
// Every failure in libasyncps is thrown as one of these; what() is one line that names the
// failing call or the bad input. A program's main catches them, prints what(), and calls
// MPI_Abort so that no rank is left waiting for this one.
#pragma once
#include <stdexcept>
#include <string>

namespace asyncps {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An MPI call returned an error code. what(): "MPI_Win_allocate failed: <MPI's message> (at file:line)".
class MpiError : public Error {
 public:
  MpiError(const std::string& call, int code, const std::string& where);
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// A checkpoint file is missing, damaged or of another model; what() names the file.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

// The job was started or configured in a way that cannot work (too few ranks, a layout that
// differs between ranks, a bad option value).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A rank stopped making progress for Options::stall_timeout seconds (stopped, swapped out,
// wedged in a driver, cut off); what() names it by rank and host.
class StallError : public Error {
 public:
  using Error::Error;
};

}  // namespace asyncps
