// defines: the checkpoint file formats (shard, index), atomic writes, pruning
#include "checkpoint/checkpoint_format.h"

#include <charconv>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <sstream>

#include "asyncps/error.h"
#include "asyncps/roles.h"

namespace asyncps::detail {

namespace {

constexpr char kShardMagic[8] = {'A', 'S', 'P', 'S', 'S', 'H', 'R', 'D'};
constexpr char kIndexMagic[8] = {'A', 'S', 'P', 'S', 'I', 'N', 'D', 'X'};
constexpr std::uint32_t kFormatVersion = 1;

// Sizes computed from a file or a layout never wrap: a + b and a * b, or CheckpointError.
std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw CheckpointError("a checkpoint size overflows 64 bits");
  return r;
}
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw CheckpointError("a checkpoint size overflows 64 bits");
  return r;
}

// What is wrong with a shard's name in an index (empty: nothing): a plain name in the index's
// own directory, never a path that leads elsewhere.
std::string plain_name_problem(const std::string& name) {
  const std::string p = limits::file_name_problem(name, kMaxShardFileNameBytes);
  return p.empty() ? p : "a shard name that is not a plain file name (it " + p + ")";
}

std::string oversize(const fs::path& file, std::uint64_t size, std::uint64_t bound, const char* what) {
  return file.string() + ": " + std::to_string(size) + " bytes, more than " + what + " can be (" + std::to_string(bound) +
         ")";
}

// Appends little-endian values to a byte string (x86-64 and every host we target are little-endian).
class Writer {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void bytes(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  void str(const std::string& s) {  // (the writers' checks keep every name far below 2^32 bytes)
    put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void floats(std::span<const float> v) { bytes(v.data(), v.size_bytes()); }
  void reserve(std::size_t n) { out_.reserve(n); }
  std::string finish() {  // appends the checksum of everything so far
    put<std::uint64_t>(checksum64(out_.data(), out_.size()));
    return std::move(out_);
  }

 private:
  std::string out_;
};

// Reads what Writer wrote; every read is bounds-checked, fails as "truncated", and allocates no
// more than the bytes it reads.
class Reader {
 public:
  Reader(const std::string& data, const fs::path& file) : data_(data), file_(file) {}
  template <class T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, data_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  // A length-prefixed string of at most `max` bytes.
  std::string str(std::size_t max, const char* what) {
    const auto n = get<std::uint32_t>();
    if (n > max)
      fail(std::string(what) + " of " + std::to_string(n) + " bytes, more than " + std::to_string(max) +
           " (damaged header)");
    need(n);
    std::string s(data_, pos_, n);
    pos_ += n;
    return s;
  }
  void skip(std::uint64_t n) {
    if (n > data_.size() - pos_) fail("truncated: the file ends inside its header");
    pos_ += static_cast<std::size_t>(n);
  }
  std::vector<float> floats(std::uint64_t n) {
    if (n > (data_.size() - pos_) / sizeof(float)) fail("truncated: the file ends inside its data");
    std::vector<float> v(static_cast<std::size_t>(n));  // n * 4 <= the bytes left: no overflow
    if (n) std::memcpy(v.data(), data_.data() + pos_, v.size() * sizeof(float));  // (an empty vector's data() may be null)
    pos_ += v.size() * sizeof(float);
    return v;
  }
  void expect_magic(const char (&magic)[8], const char* what) {
    need(8);
    if (std::memcmp(data_.data() + pos_, magic, 8) != 0) fail(std::string("not a libasyncps ") + what + " file (bad magic)");
    pos_ += 8;
  }
  void expect_version() {
    if (const auto v = get<std::uint32_t>(); v != kFormatVersion)
      fail("format version " + std::to_string(v) + ", this build reads version " + std::to_string(kFormatVersion));
  }
  // Checks the trailing checksum; call when the content has been read.
  std::uint64_t verify_checksum() {
    const std::size_t content = pos_;
    const auto stored = get<std::uint64_t>();
    if (pos_ != data_.size()) fail("trailing bytes after the checksum (damaged)");
    if (checksum64(data_.data(), content) != stored) fail("checksum mismatch (the file is damaged)");
    return stored;
  }
  // The same for a file whose content is not read to its end: the last 8 bytes are the checksum.
  void verify_checksum_of_all() const {
    if (data_.size() < 8) fail("truncated: the file ends inside its header");
    std::uint64_t stored;
    std::memcpy(&stored, data_.data() + data_.size() - 8, 8);
    if (checksum64(data_.data(), data_.size() - 8) != stored) fail("checksum mismatch (the file is damaged)");
  }
  [[noreturn]] void fail(const std::string& problem) const { throw CheckpointError(file_.string() + ": " + problem); }

 private:
  void need(std::size_t n) const {
    if (n > data_.size() - pos_) fail(data_.empty() ? "empty file" : "truncated: the file ends inside its header");
  }
  const std::string& data_;
  const fs::path& file_;
  std::size_t pos_ = 0;
};

// A checkpoint file opened for reading. Only a regular file is read: a FIFO, device or directory
// in its place is an error, never a wait (opened non-blocking, then checked). `follow_links`:
// false for files the library finds itself (in the directory, or named by an index): a symbolic
// link there is refused, so nothing outside the checkpoint directory is read through one. Its
// size is known before anything is read, so callers refuse a file too large without reading it.
class InputFile {
 public:
  InputFile(const fs::path& file, bool follow_links) : file_(file) {
    fd_ = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW));
    if (fd_ < 0) {
      const int e = errno;
      throw CheckpointError(file.string() + ": cannot open it: " +
                            (e == ELOOP ? std::string("a symbolic link (not followed)") : std::strerror(e)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
      ::close(fd_);
      throw CheckpointError(file.string() + ": not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::uint64_t size() const noexcept { return size_; }
  // The first `n` bytes (fewer if the file shrank meanwhile: what was read is checked like any
  // file; bytes it grew by are not read). Callers bound `n`.
  std::string read(std::uint64_t n) const {
    std::string data;
    try {
      data.resize(static_cast<std::size_t>(n));
    } catch (const std::exception&) {  // (bad_alloc, length_error: within the bound, yet too much now)
      throw CheckpointError(file_.string() + ": " + std::to_string(n) + " bytes cannot be held in memory");
    }
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t got = ::pread(fd_, data.data() + done, data.size() - done, static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        const int e = errno;
        throw CheckpointError(file_.string() + ": read failed: " + std::strerror(e));
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    data.resize(done);
    return data;
  }

 private:
  const fs::path& file_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

std::string foreign_layout(std::uint64_t hash, std::uint64_t arena, const ParamLayout& layout) {
  std::ostringstream m;
  m << "written for another model (layout hash " << std::hex << hash << std::dec << ", " << arena
    << " floats; this model has " << std::hex << layout.hash() << std::dec << ", " << layout.size() << " floats)";
  return m.str();
}

// Refuses a shard file of `size` bytes whose first bytes are `head` when it is larger than a
// shard of `layout` can be: the range in its header (or, without a readable header, the whole
// arena) as params and shadow. A file of another model is named as one.
void check_shard_size(const std::string& head, std::uint64_t size, const fs::path& file, const ParamLayout& layout) {
  std::uint64_t count = layout.size(), hash = layout.hash(), arena = layout.size();
  if (head.size() >= kShardHeaderBytes && std::memcmp(head.data(), kShardMagic, 8) == 0) {
    std::memcpy(&hash, head.data() + 16, 8);
    std::memcpy(&arena, head.data() + 24, 8);
    std::memcpy(&count, head.data() + 56, 8);
  }
  std::uint64_t bound = 0;
  try {
    bound = max_shard_bytes(layout, count);
  } catch (const CheckpointError& e) {  // a layout no checkpoint can hold
    throw CheckpointError(file.string() + ": " + e.what());
  }
  if (size <= bound) return;
  if (hash != layout.hash() || arena != layout.size())
    throw CheckpointError(file.string() + ": " + foreign_layout(hash, arena, layout));
  throw CheckpointError(oversize(file, size, bound, "a checkpoint of this layout"));
}

// What a reader refuses in a tensor (empty: nothing).
std::string tensor_problem(const std::string& name, std::uint64_t rank) {
  if (auto p = limits::tensor_name_problem(name); !p.empty()) return "tensor " + limits::shown_name(name) + ": its name " + p;
  if (rank > limits::kMaxTensorRank)
    return "tensor " + limits::shown_name(name) + " has " + std::to_string(rank) + " dimensions, more than " +
           std::to_string(limits::kMaxTensorRank);
  return {};
}

void write_tensor_table(Writer& w, const ParamLayout& layout) {
  w.put<std::uint32_t>(static_cast<std::uint32_t>(layout.tensors().size()));
  for (const auto& t : layout.tensors()) {
    w.str(t.name);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(t.shape.size()));
    for (auto d : t.shape) w.put<std::int64_t>(d);
    w.put<std::uint64_t>(t.offset);
    w.put<std::uint64_t>(t.size);
  }
}

void fsync_path(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags);
  if (fd < 0) throw Error(p.string() + ": cannot open it to sync: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw Error(p.string() + ": fsync failed: " + std::strerror(errno));
}

std::int64_t step_of(const std::string& name) {  // "ckpt-<step>.…" -> step, or -1 (also when it does not fit)
  static const std::regex re(R"(^ckpt-(\d+)\..*)");
  std::smatch m;
  return std::regex_match(name, m, re) ? parse_step(m[1].str()) : -1;
}

}  // namespace

std::int64_t parse_step(const std::string& digits) noexcept {
  std::int64_t v = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return ec == std::errc{} && end == digits.data() + digits.size() && v >= 0 ? v : -1;
}

std::error_code for_each_name(const fs::path& dir, const std::function<void(const std::string& name)>& f) {
  std::error_code ec;
  // (a range-for would throw from its increment: an entry that vanishes, a read error)
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) f(it->path().filename().string());
  return ec;
}

fs::path shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers, std::int64_t generation) {
  return dir / ("ckpt-" + std::to_string(step) + ".shard-" + std::to_string(server) + "-of-" +
                std::to_string(num_servers) + (generation > 0 ? ".g" + std::to_string(generation) : ""));
}

std::optional<ShardName> parse_shard_name(const std::string& name) {
  static const std::regex re(R"(^ckpt-(\d+)\.shard-(\d+)-of-(\d+)(\.g(\d+))?(\.final)?$)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  ShardName n;
  n.step = parse_step(m[1].str());
  n.server = parse_step(m[2].str());
  n.num_servers = parse_step(m[3].str());
  n.generation = m[5].matched ? parse_step(m[5].str()) : 0;
  n.final_save = m[6].matched;
  if (n.step < 0 || n.server < 0 || n.num_servers < 0 || n.generation < 0) return std::nullopt;  // digits that do not fit
  return n;
}

fs::path index_path(const fs::path& dir, std::int64_t step) { return dir / ("ckpt-" + std::to_string(step) + ".index"); }

std::uint64_t checksum64(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
    h ^= h >> 29;  // mix the high bits down so every input bit reaches every output bit
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ bytes;
}

void write_file_atomically(const fs::path& path, const std::string& bytes, const fs::path& tmp_name) {
  const fs::path tmp = tmp_name.empty() ? fs::path(path.string() + ".tmp") : tmp_name;
  // A leftover temporary (a crash mid-save) is removed; the new one is created exclusively and
  // never through a symbolic link (one planted at the name is removed, its target untouched).
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(tmp.string() + ": cannot create it: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(tmp.string() + ": write failed: " + std::strerror(e));
    }
    done += static_cast<std::size_t>(n);
  }
  const int synced = ::fsync(fd), sync_errno = errno;
  const int closed = ::close(fd), close_errno = errno;  // closed whatever fsync said
  if (synced != 0 || closed != 0) {
    ::unlink(tmp.c_str());
    throw Error(tmp.string() + ": " + (synced != 0 ? "fsync" : "close") +
                " failed: " + std::strerror(synced != 0 ? sync_errno : close_errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw Error(path.string() + ": rename failed: " + std::strerror(e));
  }
  fsync_path(path.parent_path().empty() ? fs::path(".") : path.parent_path(), O_RDONLY | O_DIRECTORY);
}

std::uint64_t tensor_table_bytes(const ParamLayout& layout) {
  const auto& tensors = layout.tensors();
  if (tensors.size() > limits::kMaxTensors)
    throw CheckpointError("the layout has " + std::to_string(tensors.size()) + " tensors, more than a checkpoint holds (" +
                          std::to_string(limits::kMaxTensors) + ")");
  std::uint64_t bytes = 4;  // the count
  for (const auto& t : tensors) {
    if (auto p = tensor_problem(t.name, t.shape.size()); !p.empty()) throw CheckpointError("cannot checkpoint " + p);
    // name (length + bytes), rank, dims, offset, size
    bytes = add(bytes, add(4 + 4 + 16, add(t.name.size(), mul(8, t.shape.size()))));
  }
  return bytes;
}

std::uint64_t max_rows_section_bytes(const ParamLayout& layout) {
  const auto& tables = layout.tables();
  if (tables.empty()) return 0;
  if (tables.size() > limits::kMaxTables)
    throw CheckpointError("the layout has " + std::to_string(tables.size()) + " tables, more than a checkpoint holds (" +
                          std::to_string(limits::kMaxTables) + ")");
  std::uint64_t bytes = 4;  // the count
  for (const auto& t : tables)
    bytes = add(bytes, add(20, mul(mul(t.spec.rows, static_cast<std::uint64_t>(t.stride())), sizeof(float))));
  return bytes;
}

std::uint64_t max_shard_bytes(const ParamLayout& layout, std::uint64_t count) {
  count = std::min<std::uint64_t>(count, layout.size());
  return add(add(add(kShardHeaderBytes, tensor_table_bytes(layout)), add(mul(2 * sizeof(float), count), 8)),
             max_rows_section_bytes(layout));
}

std::string encode_shard(const ShardHeader& h, const ParamLayout& layout, std::span<const float> params,
                         std::span<const float> shadow, std::span<const float> rows) {
  Writer w;
  w.reserve(kShardHeaderBytes + params.size_bytes() + shadow.size_bytes() + rows.size_bytes() + 1024);
  w.bytes(kShardMagic, 8);
  w.put<std::uint32_t>(kFormatVersion);
  w.put<std::uint32_t>(shadow.empty() ? 0 : 1);
  w.put<std::uint64_t>(h.layout_hash);
  w.put<std::uint64_t>(h.arena);
  w.put<std::int64_t>(h.step);
  w.put<std::uint32_t>(h.num_servers);
  w.put<std::uint32_t>(h.server);
  w.put<std::uint64_t>(h.offset);
  w.put<std::uint64_t>(h.count);
  write_tensor_table(w, layout);
  w.floats(params);
  if (!shadow.empty()) w.floats(shadow);
  if (!layout.tables().empty()) {  // the rows section: each table's part, then the floats
    const bool planned = h.num_servers >= 1 && h.server < h.num_servers;  // (unchecked here: a crafted header)
    const RowPlan plan = planned ? RowPlan(layout, static_cast<int>(h.num_servers)) : RowPlan();
    w.put<std::uint32_t>(static_cast<std::uint32_t>(layout.tables().size()));
    for (std::size_t t = 0; t < layout.tables().size(); ++t) {
      const RowPlan::Part part = planned ? plan.part(t, static_cast<int>(h.server)) : RowPlan::Part{};
      w.put<std::uint64_t>(part.first_row);
      w.put<std::uint64_t>(part.rows);
      w.put<std::uint32_t>(static_cast<std::uint32_t>(layout.tables()[t].stride()));
    }
    w.floats(rows);
  }
  return w.finish();
}

namespace {
// The floats server `server` of `num_servers` holds for every table of `layout` (0 without tables).
std::uint64_t server_row_floats(const ParamLayout& layout, std::uint32_t num_servers, std::uint32_t server) {
  if (layout.tables().empty()) return 0;
  return RowPlan(layout, static_cast<int>(num_servers)).server_floats(static_cast<int>(server));
}
}  // namespace

std::uint64_t write_shard(const fs::path& dir, const ShardHeader& h, const ParamLayout& layout,
                          std::span<const float> params, std::span<const float> shadow, std::span<const float> rows,
                          bool final_save, std::int64_t generation) {
  const int server = static_cast<int>(std::min<std::uint32_t>(h.server, limits::kMaxServers));
  const int servers = static_cast<int>(std::min<std::uint32_t>(h.num_servers, limits::kMaxServers));
  const fs::path file = final_save ? final_shard_path(dir, h.step, server, servers, generation)
                                   : shard_path(dir, h.step, server, servers, generation);
  // what read_shard would refuse is never written
  auto refuse = [&](const std::string& why) { throw CheckpointError(file.string() + ": not written: " + why); };
  if (h.layout_hash != layout.hash() || h.arena != layout.size()) refuse("its header is of another layout");
  if (h.step < 0) refuse("a negative global step");
  if (h.num_servers == 0 || h.num_servers > static_cast<std::uint32_t>(limits::kMaxServers) || h.server >= h.num_servers)
    refuse("server " + std::to_string(h.server) + " of " + std::to_string(h.num_servers));
  if (h.offset > h.arena || h.count > h.arena - h.offset) refuse("its range lies outside the arena");
  if (params.size() != h.count || (!shadow.empty() && shadow.size() != h.count))
    refuse("the parameters or the shadow do not hold the header's count of floats");
  try {
    tensor_table_bytes(layout);  // throw for a tensor or a table a reader would refuse
    max_rows_section_bytes(layout);
  } catch (const CheckpointError& e) {
    refuse(e.what());
  }
  if (const std::uint64_t want = server_row_floats(layout, h.num_servers, h.server); rows.size() != want)
    refuse("the embedding tables' rows are " + std::to_string(rows.size()) + " floats, server " + std::to_string(h.server) +
           " of " + std::to_string(h.num_servers) + " holds " + std::to_string(want));
  try {
    const std::string bytes = encode_shard(h, layout, params, shadow, rows);
    std::uint64_t sum;
    std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
    write_file_atomically(file, bytes);
    return sum;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // (out of memory): the file named all the same
    throw Error(file.string() + ": not written: " + e.what());
  }
}

ShardFile read_shard(const fs::path& file, const ParamLayout& layout) {
  const InputFile f(file, /*follow_links=*/false);
  check_shard_size(f.read(std::min<std::uint64_t>(f.size(), kShardHeaderBytes)), f.size(), file, layout);
  return parse_shard(f.read(f.size()), file, layout);
}

ShardFile parse_shard(const std::string& data, const fs::path& file, const ParamLayout& layout) {
  try {
    check_shard_size(data, data.size(), file, layout);
    Reader r(data, file);
    ShardFile s;
    r.expect_magic(kShardMagic, "checkpoint shard");
    r.expect_version();
    const auto has_shadow = r.get<std::uint32_t>();
    if (has_shadow > 1) r.fail("a shadow flag of " + std::to_string(has_shadow) + " (damaged header)");
    ShardHeader& h = s.header;
    h.layout_hash = r.get<std::uint64_t>();
    h.arena = r.get<std::uint64_t>();
    h.step = r.get<std::int64_t>();
    h.num_servers = r.get<std::uint32_t>();
    h.server = r.get<std::uint32_t>();
    h.offset = r.get<std::uint64_t>();
    h.count = r.get<std::uint64_t>();
    if (h.step < 0) r.fail("a negative global step (damaged header)");
    if (h.num_servers == 0 || h.num_servers > static_cast<std::uint32_t>(limits::kMaxServers) ||
        h.server >= h.num_servers)
      r.fail("server " + std::to_string(h.server) + " of " + std::to_string(h.num_servers) + " (damaged header)");
    // (written so that it cannot wrap: offset + count may exceed 2^64)
    if (h.offset > h.arena || h.count > h.arena - h.offset) r.fail("shard range outside the arena (damaged header)");
    const auto tensors = r.get<std::uint32_t>();
    if (tensors > limits::kMaxTensors)
      r.fail("a table of " + std::to_string(tensors) + " tensors, more than " + std::to_string(limits::kMaxTensors) +
             " (damaged header)");
    for (std::uint32_t i = 0; i < tensors; ++i) {
      const std::string name = r.str(limits::kMaxTensorNameBytes, "a tensor name");
      const auto nd = r.get<std::uint32_t>();
      if (auto p = tensor_problem(name, nd); !p.empty()) r.fail(p + " (damaged header)");
      r.skip(8ull * nd + 16);  // dims, offset, size
    }
    if (h.layout_hash != layout.hash() || h.arena != layout.size()) {
      // another model's file: its sections are not this layout's to read (a damaged one is named so)
      r.verify_checksum_of_all();
      r.fail(foreign_layout(h.layout_hash, h.arena, layout));
    }
    s.params = r.floats(h.count);
    if (has_shadow) s.shadow = r.floats(h.count);
    if (!layout.tables().empty()) {
      // the rows section: the parts must be this server's share of each table, as RowPlan
      // places it for the header's number of servers (bounded by max_rows_section_bytes above)
      const auto& tables = layout.tables();
      const auto n = r.get<std::uint32_t>();
      if (n != tables.size())
        r.fail("a rows section of " + std::to_string(n) + " tables, the layout has " + std::to_string(tables.size()) +
               " (damaged)");
      const RowPlan plan(layout, static_cast<int>(h.num_servers));
      std::uint64_t floats = 0;
      for (std::size_t t = 0; t < tables.size(); ++t) {
        const auto first = r.get<std::uint64_t>(), rows = r.get<std::uint64_t>();
        const auto stride = r.get<std::uint32_t>();
        const RowPlan::Part& want = plan.part(t, static_cast<int>(h.server));
        if (first != want.first_row || rows != want.rows || stride != static_cast<std::uint32_t>(tables[t].stride()))
          r.fail("table '" + tables[t].name + "': rows [" + std::to_string(first) + ", +" + std::to_string(rows) +
                 ") of stride " + std::to_string(stride) + ", server " + std::to_string(h.server) + " of " +
                 std::to_string(h.num_servers) + " holds [" + std::to_string(want.first_row) + ", +" +
                 std::to_string(want.rows) + ") of stride " + std::to_string(tables[t].stride()) + " (damaged)");
        floats += rows * static_cast<std::uint64_t>(stride);  // (rows <= the table's, stride <= kMaxTableDim + 1)
      }
      s.rows = r.floats(floats);
    }
    s.checksum = r.verify_checksum();
    return s;
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {  // (an allocation that failed: the bytes were bounded)
    throw CheckpointError(file.string() + ": " + e.what());
  }
}

std::string encode_index(const Index& index) {
  Writer w;
  w.bytes(kIndexMagic, 8);
  w.put<std::uint32_t>(kFormatVersion);
  w.put<std::uint32_t>(index.num_servers);
  w.put<std::uint64_t>(index.layout_hash);
  w.put<std::uint64_t>(index.arena);
  w.put<std::int64_t>(index.step);
  for (const auto& e : index.shards) {
    w.put<std::uint64_t>(e.offset);
    w.put<std::uint64_t>(e.count);
    w.put<std::uint64_t>(e.checksum);
    w.str(e.file);
  }
  return w.finish();
}

void write_index(const fs::path& dir, const Index& index) {
  const fs::path file = index_path(dir, index.step);
  const std::string bytes = encode_index(index);
  try {
    parse_index(bytes, file);  // what a reader would refuse is never written
  } catch (const CheckpointError& e) {
    throw CheckpointError(std::string(e.what()) + "; not written");
  }
  try {
    write_file_atomically(file, bytes);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // the file named all the same
    throw Error(file.string() + ": not written: " + e.what());
  }
}

std::string read_index_bytes(const fs::path& file, bool follow_links) {
  const InputFile f(file, follow_links);
  if (f.size() > kMaxIndexBytes) throw CheckpointError(oversize(file, f.size(), kMaxIndexBytes, "a checkpoint index"));
  return f.read(f.size());
}

Index read_index(const fs::path& file, bool follow_links) { return parse_index(read_index_bytes(file, follow_links), file); }

std::string another_model(std::uint64_t index_floats, std::size_t model_floats) {
  if (index_floats != model_floats)
    return std::to_string(index_floats) + " floats; this model has " + std::to_string(model_floats);
  return "the same " + std::to_string(model_floats) +
         " floats, but other tensors or tables: their names, shapes or order, or a table's rows, dim, row optimizer, "
         "its settings or seed";
}

Index parse_index(const std::string& data, const fs::path& file) {
  try {
    Reader r(data, file);
    if (data.size() > kMaxIndexBytes) throw CheckpointError(oversize(file, data.size(), kMaxIndexBytes, "a checkpoint index"));
    Index x;
    r.expect_magic(kIndexMagic, "checkpoint index");
    r.expect_version();
    x.num_servers = r.get<std::uint32_t>();
    if (x.num_servers == 0 || x.num_servers > static_cast<std::uint32_t>(limits::kMaxServers))
      r.fail(std::to_string(x.num_servers) + " servers, not in [1, " + std::to_string(limits::kMaxServers) +
             "] (damaged)");
    x.layout_hash = r.get<std::uint64_t>();
    x.arena = r.get<std::uint64_t>();
    x.step = r.get<std::int64_t>();
    if (x.arena > limits::kMaxArenaFloats)
      r.fail("an arena of " + std::to_string(x.arena) + " floats, more than " + std::to_string(limits::kMaxArenaFloats) +
             " (damaged)");
    if (x.step < 0) r.fail("a negative global step (damaged)");
    for (std::uint32_t s = 0; s < x.num_servers; ++s) {
      IndexEntry e;
      e.offset = r.get<std::uint64_t>();
      e.count = r.get<std::uint64_t>();
      e.checksum = r.get<std::uint64_t>();
      e.file = r.str(kMaxShardFileNameBytes, "a shard name");
      if (auto p = plain_name_problem(e.file); !p.empty()) r.fail(p + " (damaged or crafted index)");
      x.shards.push_back(std::move(e));
    }
    r.verify_checksum();
    // the shards must tile the arena: in order, without gaps or overlaps, from 0 to its end
    std::uint64_t end = 0;
    for (const auto& e : x.shards) {
      if (e.offset != end || e.count > x.arena - end) r.fail("shard ranges do not tile the arena (damaged index)");
      end = e.offset + e.count;
    }
    if (end != x.arena) r.fail("shard ranges do not cover the arena (damaged index)");
    return x;
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {  // (an allocation that failed: the entries are bounded by the bytes)
    throw CheckpointError(file.string() + ": " + e.what());
  }
}

fs::path final_shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers,
                          std::int64_t generation) {
  return shard_path(dir, step, server, num_servers, generation).string() + ".final";
}

std::int64_t newest_generation(const fs::path& dir, std::int64_t step) {
  std::int64_t newest = -1;
  for_each_name(dir, [&](const std::string& name) {
    if (const auto n = parse_shard_name(name); n && n->step == step) newest = std::max(newest, n->generation);
  });
  return newest;
}

void remove_step_shards(const fs::path& dir, std::int64_t step, int server, int num_servers,
                        const std::vector<std::string>& keep) {
  std::vector<std::string> doomed;  // listed first, then removed
  for_each_name(dir, [&](const std::string& name) {
    const auto n = parse_shard_name(name);
    if (!n || n->step != step || std::find(keep.begin(), keep.end(), name) != keep.end()) return;
    if (server < 0 || (n->server == server && n->num_servers == num_servers)) doomed.push_back(name);
  });
  std::error_code ec;
  for (const auto& name : doomed) fs::remove(dir / name, ec);
}

std::vector<fs::path> files_past(const fs::path& dir, std::int64_t after_step, int server, int num_servers) {
  static const std::regex index_re(R"(^ckpt-\d+\.index$)");
  std::vector<fs::path> out;
  const std::error_code ec = for_each_name(dir, [&](const std::string& name) {
    if (step_of(name) <= after_step) return;
    if (const auto n = parse_shard_name(name)) {
      const std::int64_t k = n->server, of = n->num_servers;
      const bool a_current_server_writes_it = of == num_servers && k >= 0 && k < num_servers;
      if (a_current_server_writes_it ? k == server : server == 0) out.push_back(dir / name);
    } else if (server == 0 && std::regex_match(name, index_re)) {
      out.push_back(dir / name);
    }
  });
  // a file missed could be overwritten: a listing cut short is an error (a missing directory is not)
  if (ec && ec != std::errc::no_such_file_or_directory) throw Error(dir.string() + ": cannot list it: " + ec.message());
  return out;
}

void prune_checkpoints(const fs::path& dir, int keep, int server, int num_servers, std::vector<std::int64_t>& indexed,
                       std::vector<std::int64_t>& sharded) {
  std::error_code ec;
  auto newest_first = [](std::vector<std::int64_t>& v) {
    std::sort(v.begin(), v.end(), std::greater<>());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  newest_first(indexed);
  newest_first(sharded);
  const std::size_t kept = static_cast<std::size_t>(std::max(keep, 1));  // never the newest (validate() refuses 0)
  if (server == 0)
    while (indexed.size() > kept) {
      fs::remove(index_path(dir, indexed.back()), ec);
      indexed.pop_back();
    }
  while (sharded.size() > kept + 1) {
    remove_step_shards(dir, sharded.back(), server, num_servers);  // plain and final, every generation
    sharded.pop_back();
  }
  // temporary files this server left (a kill in the middle of a write); listed first, then removed
  const std::string mine = ".shard-" + std::to_string(server) + "-of-" + std::to_string(num_servers);
  std::vector<std::string> leftovers;
  for_each_name(dir, [&](const std::string& name) {
    if (step_of(name) < 0 || !name.ends_with(".tmp")) return;
    if (name.find(mine) != std::string::npos || (server == 0 && name.find(".index") != std::string::npos))
      leftovers.push_back(name);
  });
  for (const auto& name : leftovers) fs::remove(dir / name, ec);
}

}  // namespace asyncps::detail
