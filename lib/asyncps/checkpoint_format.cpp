// defines: the checkpoint file formats (shard, index), atomic writes, pruning
#include "checkpoint_format.h"

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

namespace asyncps::detail {

namespace {

constexpr char kShardMagic[8] = {'A', 'S', 'P', 'S', 'S', 'H', 'R', 'D'};
constexpr char kIndexMagic[8] = {'A', 'S', 'P', 'S', 'I', 'N', 'D', 'X'};
constexpr std::uint32_t kFormatVersion = 1;

// Appends little-endian values to a byte string (x86-64 and every host we target are little-endian).
class Writer {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void bytes(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  void str(const std::string& s) {
    put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void floats(std::span<const float> v) { bytes(v.data(), v.size() * sizeof(float)); }
  std::string finish() {  // appends the checksum of everything so far
    put<std::uint64_t>(checksum64(out_.data(), out_.size()));
    return std::move(out_);
  }

 private:
  std::string out_;
};

// Reads what Writer wrote; every read is bounds-checked and fails as "truncated".
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
  std::string str() {
    const auto n = get<std::uint32_t>();
    if (n > 4096) fail("a name longer than 4096 bytes (damaged header)");
    need(n);
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::vector<float> floats(std::uint64_t n) {
    if (n > (data_.size() - pos_) / sizeof(float)) fail("truncated: the file ends inside its data");
    std::vector<float> v(n);
    std::memcpy(v.data(), data_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return v;
  }
  void expect_magic(const char (&magic)[8], const char* what) {
    need(8);
    if (std::memcmp(data_.data() + pos_, magic, 8) != 0) fail(std::string("not a libasyncps ") + what + " file (bad magic)");
    pos_ += 8;
  }
  // Checks the trailing checksum; call when the content has been read.
  std::uint64_t verify_checksum() {
    const std::size_t content = pos_;
    const auto stored = get<std::uint64_t>();
    if (pos_ != data_.size()) fail("trailing bytes after the checksum (damaged)");
    if (checksum64(data_.data(), content) != stored) fail("checksum mismatch (the file is damaged)");
    return stored;
  }
  [[noreturn]] void fail(const std::string& problem) const { throw CheckpointError(file_.string() + ": " + problem); }

 private:
  void need(std::size_t n) const {
    if (n > data_.size() - pos_) fail(data_.empty() ? "empty file" : "truncated: the file ends inside its header");
  }
  const std::string& data_;
  fs::path file_;
  std::size_t pos_ = 0;
};

// Reads a whole checkpoint file. Only a regular file is read: a FIFO, device or directory in
// its place is an error, never a wait (opened non-blocking, then checked). `follow_links`: false
// for files the library finds itself (in the directory, or named by an index): a symbolic link
// there is refused, so nothing outside the checkpoint directory is read through one.
std::string read_whole(const fs::path& file, bool follow_links) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    const int e = errno;
    throw CheckpointError(file.string() + ": cannot open it: " +
                          (e == ELOOP ? std::string("a symbolic link (not followed)") : std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw CheckpointError(file.string() + ": not a regular file");
  }
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw CheckpointError(file.string() + ": read failed: " + std::strerror(e));
    }
    if (n == 0) break;  // shrank while being read: what was read is checked like any file
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  data.resize(done);
  return data;
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

fs::path shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers) {
  return dir / ("ckpt-" + std::to_string(step) + ".shard-" + std::to_string(server) + "-of-" +
                std::to_string(num_servers));
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

void write_file_atomically(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = path.string() + ".tmp";
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

std::uint64_t write_shard(const fs::path& dir, const ShardHeader& h, const ParamLayout& layout,
                          std::span<const float> params, std::span<const float> shadow, bool final_save) {
  Writer w;
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
  std::string bytes = w.finish();
  std::uint64_t sum;
  std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
  const int server = static_cast<int>(h.server), servers = static_cast<int>(h.num_servers);
  write_file_atomically(final_save ? final_shard_path(dir, h.step, server, servers) : shard_path(dir, h.step, server, servers),
                        bytes);
  return sum;
}

ShardFile read_shard(const fs::path& file, const ParamLayout& layout) {
  const std::string data = read_whole(file, /*follow_links=*/false);
  Reader r(data, file);
  ShardFile s;
  r.expect_magic(kShardMagic, "checkpoint shard");
  if (const auto v = r.get<std::uint32_t>(); v != kFormatVersion)
    r.fail("format version " + std::to_string(v) + ", this build reads version " + std::to_string(kFormatVersion));
  const bool has_shadow = r.get<std::uint32_t>() != 0;
  ShardHeader& h = s.header;
  h.layout_hash = r.get<std::uint64_t>();
  h.arena = r.get<std::uint64_t>();
  h.step = r.get<std::int64_t>();
  h.num_servers = r.get<std::uint32_t>();
  h.server = r.get<std::uint32_t>();
  h.offset = r.get<std::uint64_t>();
  h.count = r.get<std::uint64_t>();
  const auto tensors = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < tensors; ++i) {
    r.str();
    const auto nd = r.get<std::uint32_t>();
    if (nd > 16) r.fail("a tensor with more than 16 dimensions (damaged header)");
    for (std::uint32_t d = 0; d < nd; ++d) r.get<std::int64_t>();
    r.get<std::uint64_t>();
    r.get<std::uint64_t>();
  }
  // (written so that it cannot wrap: offset + count may exceed 2^64)
  if (h.offset > h.arena || h.count > h.arena - h.offset) r.fail("shard range outside the arena (damaged header)");
  s.params = r.floats(h.count);
  if (has_shadow) s.shadow = r.floats(h.count);
  s.checksum = r.verify_checksum();
  if (h.layout_hash != layout.hash() || h.arena != layout.size()) {
    std::ostringstream m;
    m << "written for another model (layout hash " << std::hex << h.layout_hash << std::dec << ", " << h.arena
      << " floats; this model has " << std::hex << layout.hash() << std::dec << ", " << layout.size() << " floats)";
    r.fail(m.str());
  }
  return s;
}

void write_index(const fs::path& dir, const Index& index) {
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
  write_file_atomically(index_path(dir, index.step), w.finish());
}

Index read_index(const fs::path& file, bool follow_links) { return parse_index(read_whole(file, follow_links), file); }

std::string read_file_bytes(const fs::path& file, bool follow_links) { return read_whole(file, follow_links); }

Index parse_index(const std::string& data, const fs::path& file) {
  Reader r(data, file);
  Index x;
  r.expect_magic(kIndexMagic, "checkpoint index");
  if (const auto v = r.get<std::uint32_t>(); v != kFormatVersion)
    r.fail("format version " + std::to_string(v) + ", this build reads version " + std::to_string(kFormatVersion));
  x.num_servers = r.get<std::uint32_t>();
  if (x.num_servers == 0 || x.num_servers > 65536) r.fail("impossible number of servers (damaged)");
  x.layout_hash = r.get<std::uint64_t>();
  x.arena = r.get<std::uint64_t>();
  x.step = r.get<std::int64_t>();
  for (std::uint32_t s = 0; s < x.num_servers; ++s) {
    IndexEntry e;
    e.offset = r.get<std::uint64_t>();
    e.count = r.get<std::uint64_t>();
    e.checksum = r.get<std::uint64_t>();
    e.file = r.str();
    // a plain name in the index's own directory: never a path that leads elsewhere
    if (e.file.empty() || e.file == "." || e.file == ".." || e.file.find('/') != std::string::npos ||
        e.file.find('\0') != std::string::npos)
      r.fail("a shard name that is not a plain file name (damaged or crafted index)");
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
}

fs::path final_shard_path(const fs::path& dir, std::int64_t step, int server, int num_servers) {
  return shard_path(dir, step, server, num_servers).string() + ".final";
}

std::vector<fs::path> files_past(const fs::path& dir, std::int64_t after_step, int server, int num_servers) {
  static const std::regex shard_re(R"(^ckpt-\d+\.shard-(\d+)-of-(\d+)(\.final)?$)");
  static const std::regex index_re(R"(^ckpt-\d+\.index$)");
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (step_of(name) <= after_step) continue;
    std::smatch m;
    if (std::regex_match(name, m, shard_re)) {
      const std::int64_t k = parse_step(m[1].str()), of = parse_step(m[2].str());
      const bool a_current_server_writes_it = of == num_servers && k >= 0 && k < num_servers;
      if (a_current_server_writes_it ? k == server : server == 0) out.push_back(entry.path());
    } else if (server == 0 && std::regex_match(name, index_re)) {
      out.push_back(entry.path());
    }
  }
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
  if (server == 0)
    while (indexed.size() > static_cast<std::size_t>(keep)) {
      fs::remove(index_path(dir, indexed.back()), ec);
      indexed.pop_back();
    }
  while (sharded.size() > static_cast<std::size_t>(keep) + 1) {
    fs::remove(shard_path(dir, sharded.back(), server, num_servers), ec);
    fs::remove(final_shard_path(dir, sharded.back(), server, num_servers), ec);
    sharded.pop_back();
  }
  // temporary files this server left (a kill in the middle of a write)
  const std::string mine = ".shard-" + std::to_string(server) + "-of-" + std::to_string(num_servers);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (step_of(name) < 0 || !name.ends_with(".tmp")) continue;
    if (name.find(mine) != std::string::npos || (server == 0 && name.find(".index") != std::string::npos))
      fs::remove(entry.path(), ec);
  }
}

}  // namespace asyncps::detail
