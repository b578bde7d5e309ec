// defines: asyncps::detail:: shard and index files of a checkpoint (see include/asyncps/checkpoint.h)
// Binary, little-endian. Both end with a 64-bit checksum of everything before it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <system_error>
#include <span>
#include <string>
#include <vector>

#include "asyncps/limits.h"
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
  // Where the layout has embedding tables: the writing server's rows of every table, as its row
  // window holds them (RowPlan(layout, num_servers): table after table, row after row of
  // TableInfo::stride() floats, each row's Adagrad accumulator after its values; the tables of
  // a row group interleaved, row by row); else empty.
  std::vector<float> rows;
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

// Calls `f` with the name of each entry of `dir`. Never throws for the file system's sake: an
// error (a directory that cannot be opened or read; a missing one gives
// no_such_file_or_directory) ends the listing early and is returned.
std::error_code for_each_name(const fs::path& dir, const std::function<void(const std::string& name)>& f);

// A shard's name. `generation`: 0 for the first save of a step (ckpt-<step>.shard-<s>-of-<S>),
// k > 0 for a later save of the same step (".g<k>" after it: rows moved without the dense step,
// or a run that restored that step saves it again), so that a new save never overwrites the
// files an index still names; the index commits the new set, server 0 then removes the old.
fs::path shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers, std::int64_t generation = 0);
// What a shard name says (nullopt: not a shard name of ours).
struct ShardName {
  std::int64_t step = 0, server = 0, num_servers = 0, generation = 0;
  bool final_save = false;
};
std::optional<ShardName> parse_shard_name(const std::string& name);
fs::path index_path(const fs::path& dir, std::int64_t step);

// 64-bit checksum (FNV-1a over 8-byte words, then the tail bytes).
std::uint64_t checksum64(const void* data, std::size_t bytes);

// Writes `bytes` to `path` crash-safely: temporary file (`tmp`, or "<path>.tmp" when empty),
// fsync, rename, fsync of the directory.
void write_file_atomically(const fs::path& path, const std::string& bytes, const fs::path& tmp = {});

// Bounds on reads. Every file is refused, unread and unallocated, when it is larger than a
// checkpoint of this layout could be (CheckpointError "<file>: N bytes, more than ... can be (M)").
// The limits of the tensor table, of names and of the number of shards are limits.h's, the same
// ParamLayout::add enforces; the writers refuse (CheckpointError) whatever the readers refuse, so
// a checkpoint written always reads back.
inline constexpr std::size_t kShardHeaderBytes = 64;           // magic .. count, before the tensor table
inline constexpr std::size_t kIndexHeaderBytes = 40;           // magic .. step, before the entries
inline constexpr std::size_t kMaxShardFileNameBytes = 255;     // a shard's name in an index (NAME_MAX)
inline constexpr std::size_t kIndexEntryBytes = 3 * 8 + 4 + kMaxShardFileNameBytes;  // the largest entry
// The largest index file: the header, kMaxServers entries of the largest size, the checksum.
inline constexpr std::uint64_t kMaxIndexBytes =
    kIndexHeaderBytes + static_cast<std::uint64_t>(limits::kMaxServers) * kIndexEntryBytes + 8;
// The bytes of `layout`'s tensor table; throws CheckpointError if a tensor is one a reader refuses.
std::uint64_t tensor_table_bytes(const ParamLayout& layout);
// The bytes of the rows section of a layout's shards, at most (every row of every table: one
// server holds them all); 0 without tables. Throws CheckpointError if a table is one a reader
// refuses (more than limits::kMaxTables).
std::uint64_t max_rows_section_bytes(const ParamLayout& layout);
// The largest shard file of `layout` holding `count` floats (params and shadow): header, tensor
// table, 2 x count floats, the rows section, checksum. `count` above the arena counts as the arena.
std::uint64_t max_shard_bytes(const ParamLayout& layout, std::uint64_t count);

// Writes a shard file; returns its checksum (recorded in the index). `rows`: the server's rows
// of every table (ShardFile::rows), empty without tables. `final_save`: under final_shard_path's
// name. Throws CheckpointError for a shard read_shard would refuse (a header that does not match
// `layout` or the spans, rows that are not the server's share, a tensor outside limits.h).
std::uint64_t write_shard(const fs::path& dir, const ShardHeader& h, const ParamLayout& layout,
                          std::span<const float> params, std::span<const float> shadow,
                          std::span<const float> rows = {}, bool final_save = false, std::int64_t generation = 0);
// The bytes write_shard writes, unchecked (tests build damaged and crafted files from them).
// Where the layout has tables, after the shadow: the rows section (u32 table count; per table
// u64 first row, u64 rows, u32 stride; then the floats of `rows`).
std::string encode_shard(const ShardHeader& h, const ParamLayout& layout, std::span<const float> params,
                         std::span<const float> shadow, std::span<const float> rows = {});
// Reads and verifies one shard file against `layout`. Throws CheckpointError naming the file.
// Reads at most max_shard_bytes(layout, the count in its header) bytes (checked before reading).
ShardFile read_shard(const fs::path& file, const ParamLayout& layout);
// The same, from the file's bytes: on any input it returns or throws CheckpointError (never
// anything else), and allocates no more than the bytes it is given.
ShardFile parse_shard(const std::string& bytes, const fs::path& file, const ParamLayout& layout);

// Throws CheckpointError (the index file named) for an index read_index would refuse.
void write_index(const fs::path& dir, const Index& index);
std::string encode_index(const Index& index);  // the bytes write_index writes, unchecked
// Index files verify their own checksum, give each shard a plain name and tile the arena with
// them; anything else throws CheckpointError. Only regular files are read (a FIFO, device or
// directory is refused, never waited on); `follow_links` false refuses a symbolic link too (for
// files the library found itself). At most kMaxIndexBytes are read.
Index read_index(const fs::path& file, bool follow_links = false);
// The same, from the file's bytes: on any input it returns or throws CheckpointError.
Index parse_index(const std::string& bytes, const fs::path& file);
// An index file's bytes, unparsed (the same checks as read_index: regular, at most kMaxIndexBytes).
std::string read_index_bytes(const fs::path& file, bool follow_links = false);
// What differs in an index of another model, for "written for another model (...)": the sizes,
// or where they agree, that the tensors or tables do ("9098 floats; this model has 9099", "the
// same 27599 floats, but other tensors or tables: ...").
std::string another_model(std::uint64_t index_floats, std::size_t model_floats);

// Removes this session's own checkpoint files beyond the newest `keep`: server 0 the index files
// of the steps in `indexed`, every server its shard files (plain and final, every generation) of the steps in
// `sharded` beyond the newest keep + 1 (one more: a shard may wait for the others' before its
// index exists). Both lists are this session's writes and lose what is removed. Files of other
// runs in the directory are never touched. Also removes temporary files this server left.
// Nothing here throws for a file system's sake (a file that cannot be removed stays; an
// unreadable directory, or an entry that vanishes, ends the listing early).
void prune_checkpoints(const fs::path& dir, int keep, int server, int num_servers, std::vector<std::int64_t>& indexed,
                       std::vector<std::int64_t>& sharded);

// The checkpoint files in `dir` past `after_step` that server `server` of `num_servers` answers
// for when a run starts without restoring them (they would be overwritten): its own shards
// (plain and final); server 0 also the indexes and any shard no current server writes.
// A directory that cannot be listed to its end throws Error naming it (a file missed could be
// overwritten).
std::vector<fs::path> files_past(const fs::path& dir, std::int64_t after_step, int server, int num_servers);

// The final save's shard names (written beside a periodic save of the same step, so its index
// can be replaced atomically: the old index keeps pointing at the old shards until the rename).
fs::path final_shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers,
                          std::int64_t generation = 0);

// The highest generation of any shard of `step` in `dir` (-1: none there). Server 0 starts a
// run that restored `step` above it. Never throws (an unreadable directory: what was listed).
std::int64_t newest_generation(const fs::path& dir, std::int64_t step);
// Removes the shard files of `step` in `dir` that a new index of that step no longer names:
// `server` < 0 every server's (server 0, once the index is written), else only server `server`
// of `num_servers`'s; names in `keep` stay. Never throws (a file that cannot be removed stays).
void remove_step_shards(const fs::path& dir, std::int64_t step, int server, int num_servers,
                        const std::vector<std::string>& keep = {});

}  // namespace asyncps::detail
