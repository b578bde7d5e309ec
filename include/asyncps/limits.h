// defines: asyncps::limits — the sizes libasyncps accepts, written once
// ParamLayout::add, the Session, the checkpoint writer and the checkpoint reader all take their
// bounds from here, so a file the library wrote is always one it can read back, and a file it
// reads can never ask for more than a valid layout could need.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace asyncps::limits {

// A tensor's name: 1..251 bytes (export_npy writes <dir>/<name>.npy, and a file name is at most
// 255 bytes on every common file system), no '/', '\\', NUL or other control character, and not
// "." or "..".
inline constexpr std::size_t kMaxTensorNameBytes = 251;
inline constexpr std::size_t kMaxTensors = std::size_t{1} << 20;   // tensors in one layout
inline constexpr std::size_t kMaxTensorRank = 32;                   // dimensions of one tensor
inline constexpr std::uint64_t kMaxArenaFloats = std::uint64_t{1} << 40;  // floats in the arena (4 TiB)
inline constexpr std::uint64_t kMaxTableRows = std::uint64_t{1} << 36;  // rows of one embedding table
inline constexpr int kMaxTableDim = 65536;                         // floats per row
inline constexpr std::size_t kMaxTables = 1024;                    // embedding tables in one layout
inline constexpr int kMaxServers = 65536;                           // Options::num_servers
// Options::chunk_bytes: at least one float, at most 1 GiB, so that every piece's element count
// fits MPI's int counts.
inline constexpr std::size_t kMinChunkBytes = sizeof(float);
inline constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 30;
inline constexpr int kMaxCheckpointsKept = 1000000;                 // CheckpointOptions::keep
inline constexpr double kMaxSeconds = 1e9;                          // any interval given in seconds
// Options::stall_timeout: 0 (off) or at least this; heartbeats go every min(1 s, timeout / 4),
// and a shorter timeout would name ranks stalled that are merely scheduled out.
inline constexpr double kMinStallTimeout = 0.5;
inline constexpr double kMaxStallTimeout = 1e6;

// `name` as a one-line message shows it: quoted, at most 64 bytes, control bytes as \xNN.
std::string shown_name(const std::string& name);

// Empty when `name` is a plain file name of at most `max_bytes` bytes (no '/', '\\' or control
// character, not "." or ".."); else what is wrong with it.
std::string file_name_problem(const std::string& name, std::size_t max_bytes);

// Empty when `name` is a valid tensor name; else what is wrong with it ("contains '/'", ...).
std::string tensor_name_problem(const std::string& name);

}  // namespace asyncps::limits
