// defines: asyncps::detail:: shard and index files of a checkpoint (see include/asyncps/checkpoint.h)
// Binary, little-endian. Both end with a 64-bit checksum of everything before it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "asyncps/param_layout.h"

namespace asyncps::detail {

namespace fs = std::filesystem;

struct ShardHeader {
  std::uint64_t layout_hash = 0, arena = 0;
  std::int64_t step = 0;
  std::uint32_t num_servers = 0, server = 0;
  std::uint64_t offset = 0, count = 0;
};

struct ShardFile {
  ShardHeader header;
  std::vector<float> params, shadow;  // shadow empty if none was saved
  std::uint64_t checksum = 0;
};

struct IndexEntry {
  std::uint64_t offset = 0, count = 0, checksum = 0;
  std::string file;  // name within the directory
};

struct Index {
  std::int64_t step = 0;
  std::uint32_t num_servers = 0;
  std::uint64_t layout_hash = 0, arena = 0;
  std::vector<IndexEntry> shards;
};

// The step in a checkpoint file name ("123" -> 123); -1 when it is not a number that fits an
// int64 (a stray "ckpt-123456789012345678901.index" is not a checkpoint, and never throws).
std::int64_t parse_step(const std::string& digits) noexcept;

fs::path shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers);
fs::path index_path(const fs::path& dir, std::int64_t step);

// 64-bit checksum (FNV-1a over 8-byte words, then the tail bytes).
std::uint64_t checksum64(const void* data, std::size_t bytes);

// Writes `bytes` to `path` crash-safely: temporary file, fsync, rename, fsync of the directory.
void write_file_atomically(const fs::path& path, const std::string& bytes);

// Writes a shard file; returns its checksum (recorded in the index).
// `final_save`: under final_shard_path's name.
std::uint64_t write_shard(const fs::path& dir, const ShardHeader& h, const ParamLayout& layout,
                          std::span<const float> params, std::span<const float> shadow, bool final_save = false);
// Reads and verifies one shard file against `layout`. Throws CheckpointError naming the file.
ShardFile read_shard(const fs::path& file, const ParamLayout& layout);

void write_index(const fs::path& dir, const Index& index);
// Index files verify their own checksum, give each shard a plain name and tile the arena with
// them; anything else throws CheckpointError. Only regular files are read (a FIFO, device or
// directory is refused, never waited on); `follow_links` false refuses a symbolic link too (for
// files the library found itself).
Index read_index(const fs::path& file, bool follow_links = false);
Index parse_index(const std::string& bytes, const fs::path& file);  // the same, from the file's bytes
std::string read_file_bytes(const fs::path& file, bool follow_links = false);

// Removes this session's own checkpoint files beyond the newest `keep`: server 0 the index files
// of the steps in `indexed`, every server its shard files (plain and final) of the steps in
// `sharded` beyond the newest keep + 1 (one more: a shard may wait for the others' before its
// index exists). Both lists are this session's writes and lose what is removed. Files of other
// runs in the directory are never touched. Also removes temporary files this server left.
void prune_checkpoints(const fs::path& dir, int keep, int server, int num_servers, std::vector<std::int64_t>& indexed,
                       std::vector<std::int64_t>& sharded);

// The checkpoint files in `dir` past `after_step` that server `server` of `num_servers` answers
// for when a run starts without restoring them (they would be overwritten): its own shards
// (plain and final); server 0 also the indexes and any shard no current server writes.
std::vector<fs::path> files_past(const fs::path& dir, std::int64_t after_step, int server, int num_servers);

// The final save's shard names (written beside a periodic save of the same step, so its index
// can be replaced atomically: the old index keeps pointing at the old shards until the rename).
fs::path final_shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers);

}  // namespace asyncps::detail
