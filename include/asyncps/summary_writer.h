// defines: asyncps::SummaryWriter
// Scalar curves in TensorBoard's event-file format, the files tf.summary.FileWriter and the
// tutorial's Supervisor(summary_op=...) write and `tensorboard --logdir DIR` plots. Each writer
// is one new file in `logdir`, named as TensorBoard expects (events.out.tfevents.<seconds>.<host>
// .<pid>), so each run of a job adds its own file to the same directory. Every add_scalars() is
// one Event record (TFRecord framing, masked CRC-32C, the protobuf written by hand: no protobuf
// library), flushed to the OS at once, so a running job's curves show up live.
//
//   asyncps::SummaryWriter summaries(logdir);            // on one rank only (the chief)
//   summaries.add_scalars({{"loss", loss}, {"learning_rate", lr}}, global_step);
//
// Nothing here is collective, and no rank writes unless the program makes it one. One thread at
// a time (from Python the GIL sees to it). A write that
// fails (a full disk) is one warning through asyncps::log and the writer writes no more: the
// curves stop, training goes on; the file ends with the last whole record (the torn one is cut off).
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace asyncps {

class SummaryWriter {
 public:
  // Creates logdir (and its parents) and a new event file in it, whose first record names the
  // format ("brain.Event:2"); ConfigError naming the directory if it cannot (or if it is empty).
  explicit SummaryWriter(const std::filesystem::path& logdir);
  ~SummaryWriter();
  SummaryWriter(SummaryWriter&& other) noexcept;
  SummaryWriter& operator=(SummaryWriter&& other) noexcept;
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // One Event at `step` (its wall time now) holding each (tag, value) as a scalar summary.
  // ConfigError for an empty tag or one with a NUL byte, a finite value beyond a float's range
  // (TensorBoard's scalars are 32-bit floats; NaN and Inf are written as they are), or a negative
  // step.
  void add_scalars(const std::vector<std::pair<std::string, double>>& values, std::int64_t step);
  void add_scalar(const std::string& tag, double value, std::int64_t step) { add_scalars({{tag, value}}, step); }

  // The file's path (still after close()); empty once moved from.
  const std::filesystem::path& path() const noexcept { return path_; }
  // Flushes and closes the file (the destructor does it too); later adds are refused.
  void close();

 private:
  void write_record(const std::string& data);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  long long whole_ = 0;   // bytes of the file that are whole records
  bool failed_ = false;  // a write failed: warned once, nothing more written
};

}  // namespace asyncps
