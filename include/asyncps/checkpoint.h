// defines: asyncps::CheckpointData, asyncps::TableData, read_checkpoint, list_checkpoints, export_npy,
//          export_checkpoint_npy (CheckpointOptions: asyncps/options.h)
// Crash-safe checkpoints of the arena, the chief's EMA shadow and the embedding tables' rows
// (with what their optimizers keep per row), written by the servers from their own window memory (each
// server its shard: no parameter crosses the network to be saved). A checkpoint restores on any
// number of servers: the arena moves by float range, the tables by row range.
//
// On disk, in the checkpoint directory (the job's --logdir):
//   ckpt-<step>.shard-<s>-of-<S>   server s's shard: header (magic, format version, layout hash,
//                                  global step, shard range, tensor table), parameters, EMA
//                                  shadow, its rows of each table (row range, then the rows),
//                                  64-bit checksum over all of it
//                                  (".g<k>" after it: the step's k-th later save, rows having
//                                  moved without it; ".final": the job's last save)
//   ckpt-<step>.index              written by server 0 once every shard is on disk: the step, S,
//                                  layout hash, each shard's range and checksum, its own checksum
// Every file is written to a temporary name, fsync'd, renamed, and the directory fsync'd, so a
// kill at any moment leaves either the old set or the new one. A checkpoint is valid when its
// index and every shard verify. The newest `keep` checkpoints are kept.
//
//   auto ckpt = asyncps::read_checkpoint("log_async/ckpt-1000.index", layout);  // any S
//   asyncps::export_npy("export/", layout, ckpt.params);                          // conv1_w.npy, ...
//   asyncps::export_checkpoint_npy("export/", layout, ckpt);      // ... and the tables: user.npy, ...
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "asyncps/options.h"  // CheckpointOptions
#include "asyncps/param_layout.h"

namespace asyncps {


// One embedding table of a checkpoint, whole (its rows gathered from every shard).
struct TableData {
  std::string name;
  std::uint64_t rows = 0;
  int dim = 0;
  std::vector<float> values;        // rows x dim, row after row
  // What the table's RowOptimizer keeps beside each row: rows x TableInfo::state_width() floats,
  // row after row, its state_blocks() side by side (Adagrad: one accumulator per row; Ftrl: z
  // then n, dim each; Sgd: empty).
  std::vector<float> accumulators;
};

struct CheckpointData {
  std::int64_t global_step = 0;
  int num_servers = 0;
  std::vector<float> params;  // the whole arena
  std::vector<float> shadow;  // the EMA shadow, empty if the checkpoint has none
  std::vector<TableData> tables;  // the layout's embedding tables, in ParamLayout::tables() order
};

// Reads and verifies a whole checkpoint (its index and every shard), embedding tables included.
// Throws CheckpointError naming the file and the problem: missing, truncated, checksum mismatch,
// foreign layout, larger than a checkpoint of this layout can be (refused before anything is
// read or allocated).
CheckpointData read_checkpoint(const std::filesystem::path& index, const ParamLayout& layout);

// The checkpoints in `dir`, newest first (by step), as index paths (not yet verified). Never
// throws for the file system's sake: a directory that cannot be read lists what it could.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);

// Writes each tensor of `arena` as <dir>/<name>.npy (NumPy format 1.0, little-endian float32,
// C order, the tensor's shape). numpy.load() reads them. Every name is checked first
// (limits::tensor_name_problem, and <name>.npy must fit a file name): ConfigError, nothing written.
void export_npy(const std::filesystem::path& dir, const ParamLayout& layout, const std::vector<float>& arena);
// The same for a whole checkpoint: each tensor of ckpt.params, and each embedding table as
// <dir>/<table>.npy (rows x dim), with one <dir>/<table>.<block>.npy per block of its optimizer's
// state (TableInfo::state_blocks(): rows, or rows x width; Adagrad's <table>.accumulator.npy,
// Ftrl's <table>.ftrl_z.npy and <table>.ftrl_n.npy). Every
// file name is checked first, against the others too: ConfigError, nothing written. `ckpt` must
// be read_checkpoint's of `layout` (Error otherwise).
void export_checkpoint_npy(const std::filesystem::path& dir, const ParamLayout& layout, const CheckpointData& ckpt);

}  // namespace asyncps
