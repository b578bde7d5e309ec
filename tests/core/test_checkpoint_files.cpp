// Proves: checkpoint files round-trip bit-exactly; a flipped byte, a truncated file, an empty
// file and a foreign layout are each detected with the file named; a checkpoint written by 2
// servers reads back whole; pruning keeps the newest; exported .npy files carry the shapes.
// Bounded reads: a file larger than a checkpoint of the layout can be (a 64 GiB sparse one) is
// refused without being read or allocated; the tensor table, names and shard counts are bounded
// by limits.h; the writers refuse what the readers refuse; the parsers throw only CheckpointError
// on any bytes; the restore's skip paths take any failure; export_npy and validate(CheckpointOptions)
// refuse names and options that cannot work.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <system_error>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asyncps_internal/checkpoint/checkpoint_format.h"
#include "asyncps_internal/checkpoint/checkpointer.h"
#include "asyncps/checkpoint.h"
#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps/log.h"
#include "asyncps/roles.h"

using namespace asyncps;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("asyncps-ckpt-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

ParamLayout small_layout() {
  ParamLayout l;
  l.add("w", {3, 5});
  l.add("b", {7});
  return l;  // 22 floats
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Writes a whole checkpoint as `servers` servers would, with its index.
void write_checkpoint(const fs::path& dir, const ParamLayout& layout, std::int64_t step, int servers,
                      const std::vector<float>& params, const std::vector<float>& shadow) {
  ShardPlan plan(layout.size(), servers);
  detail::Index idx{step, static_cast<std::uint32_t>(servers), layout.hash(), layout.size(), {}};
  for (const auto& sh : plan.shards()) {
    detail::ShardHeader h{layout.hash(), layout.size(), step, static_cast<std::uint32_t>(servers),
                          static_cast<std::uint32_t>(sh.server), sh.offset, sh.size};
    const auto sum = detail::write_shard(dir, h, layout, std::span(params).subspan(sh.offset, sh.size),
                                         std::span(shadow).subspan(sh.offset, sh.size));
    idx.shards.push_back({sh.offset, sh.size, sum, detail::shard_path({}, step, sh.server, servers).string()});
  }
  detail::write_index(dir, idx);
}

void flip_byte(const fs::path& f, std::size_t at) {
  std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(at));
  char c;
  io.get(c);
  io.seekp(static_cast<std::streamoff>(at));
  io.put(static_cast<char>(c ^ 0x10));
}

}  // namespace

TEST_CASE("a checkpoint round-trips bit-exactly, with its EMA shadow, from any number of servers", "[checkpoint]") {
  TempDir tmp;
  const auto layout = small_layout();
  const auto params = random_floats(layout.size(), 1), shadow = random_floats(layout.size(), 2);
  for (int servers : {1, 2, 3}) {
    write_checkpoint(tmp.path, layout, 100 + servers, servers, params, shadow);
    const auto back = read_checkpoint(detail::index_path(tmp.path, 100 + servers), layout);
    CHECK(back.global_step == 100 + servers);
    CHECK(back.num_servers == servers);
    CHECK(std::memcmp(back.params.data(), params.data(), params.size() * 4) == 0);
    CHECK(std::memcmp(back.shadow.data(), shadow.data(), shadow.size() * 4) == 0);
  }
}

TEST_CASE("a flipped byte anywhere in a shard or an index is detected", "[checkpoint]") {
  TempDir tmp;
  const auto layout = small_layout();
  const auto params = random_floats(layout.size(), 3);
  write_checkpoint(tmp.path, layout, 7, 1, params, params);
  const auto shard = detail::shard_path(tmp.path, 7, 0, 1), index = detail::index_path(tmp.path, 7);
  const auto size = fs::file_size(shard);
  for (std::size_t at : {std::size_t{3}, std::size_t{40}, size / 2, size - 12, size - 1}) {
    const auto copy = tmp.path / "copy";
    fs::copy_file(shard, copy, fs::copy_options::overwrite_existing);
    flip_byte(shard, at);
    CHECK_THROWS_AS(read_checkpoint(index, layout), CheckpointError);
    fs::copy_file(copy, shard, fs::copy_options::overwrite_existing);
  }
  CHECK_NOTHROW(read_checkpoint(index, layout));
  flip_byte(index, fs::file_size(index) / 2);
  CHECK_THROWS_WITH(read_checkpoint(index, layout), Catch::Contains(index.string()) && Catch::Contains("damaged"));
}

TEST_CASE("truncated and empty checkpoint files are detected and named", "[checkpoint]") {
  TempDir tmp;
  const auto layout = small_layout();
  const auto params = random_floats(layout.size(), 4);
  write_checkpoint(tmp.path, layout, 9, 1, params, params);
  const auto shard = detail::shard_path(tmp.path, 9, 0, 1), index = detail::index_path(tmp.path, 9);
  fs::resize_file(shard, fs::file_size(shard) - 30);
  CHECK_THROWS_WITH(read_checkpoint(index, layout), Catch::Contains(shard.string()));
  fs::resize_file(shard, 0);
  CHECK_THROWS_WITH(read_checkpoint(index, layout), Catch::Contains("empty file"));
  fs::remove(shard);
  CHECK_THROWS_WITH(read_checkpoint(index, layout), Catch::Contains("cannot open"));
}

TEST_CASE("a checkpoint of another layout is refused", "[checkpoint]") {
  TempDir tmp;
  const auto layout = small_layout();
  write_checkpoint(tmp.path, layout, 5, 1, random_floats(22, 5), random_floats(22, 6));
  ParamLayout other;
  other.add("w", {5, 3});  // same size, other shape
  other.add("b", {7});
  CHECK_THROWS_WITH(read_checkpoint(detail::index_path(tmp.path, 5), other), Catch::Contains("another model"));
}

TEST_CASE("checkpoints are listed newest first; pruning keeps this run's newest and never touches another run's",
          "[checkpoint]") {
  TempDir tmp;
  const auto layout = small_layout();
  const auto p = random_floats(22, 7);
  for (int step : {10, 200, 30, 4000, 50}) write_checkpoint(tmp.path, layout, step, 1, p, p);
  auto list = list_checkpoints(tmp.path);
  REQUIRE(list.size() == 5);
  CHECK(list.front().filename() == "ckpt-4000.index");
  CHECK(list.back().filename() == "ckpt-10.index");
  std::ofstream(tmp.path / "ckpt-99.shard-0-of-1.tmp") << "partial";
  // this run wrote 10, 30, 50 and 200 (4000 is another run's: newer by step, but not ours)
  std::vector<std::int64_t> indexed{10, 30, 50, 200}, sharded{10, 30, 50, 200};
  detail::prune_checkpoints(tmp.path, 2, 0, 1, indexed, sharded);
  list = list_checkpoints(tmp.path);
  REQUIRE(list.size() == 3);
  CHECK(list[0].filename() == "ckpt-4000.index");  // another run's checkpoint is kept
  CHECK(list[1].filename() == "ckpt-200.index");
  CHECK(list[2].filename() == "ckpt-50.index");
  CHECK(indexed == std::vector<std::int64_t>{200, 50});
  CHECK_FALSE(fs::exists(tmp.path / "ckpt-99.shard-0-of-1.tmp"));
  CHECK(fs::exists(detail::shard_path(tmp.path, 30, 0, 1)));  // keep + 1 shards stay
  CHECK_FALSE(fs::exists(detail::shard_path(tmp.path, 10, 0, 1)));
  CHECK(fs::exists(detail::shard_path(tmp.path, 4000, 0, 1)));
}

TEST_CASE("a step saved again takes a new generation's names; its old shards go, no other step's", "[checkpoint]") {
  TempDir d;
  CHECK(detail::shard_path({}, 7, 1, 2).string() == "ckpt-7.shard-1-of-2");
  CHECK(detail::shard_path({}, 7, 1, 2, 3).string() == "ckpt-7.shard-1-of-2.g3");
  CHECK(detail::final_shard_path({}, 7, 1, 2, 3).string() == "ckpt-7.shard-1-of-2.g3.final");
  const auto n = detail::parse_shard_name("ckpt-7.shard-1-of-2.g3.final");
  REQUIRE(n);
  CHECK((n->step == 7 && n->server == 1 && n->num_servers == 2 && n->generation == 3 && n->final_save));
  CHECK_FALSE(detail::parse_shard_name("ckpt-7.shard-1-of-2.g3.tmp"));
  CHECK_FALSE(detail::parse_shard_name("ckpt-7.shard-1-of-2.gx"));
  CHECK_FALSE(detail::parse_shard_name("ckpt-7.shard-1-of-2.g99999999999999999999"));  // does not fit: not ours
  CHECK(detail::newest_generation(d.path, 7) == -1);
  for (const char* name : {"ckpt-7.shard-0-of-2", "ckpt-7.shard-1-of-2", "ckpt-7.shard-0-of-2.g1", "ckpt-7.shard-1-of-2.g1",
                           "ckpt-7.shard-0-of-2.g2.final", "ckpt-7.shard-0-of-1.final", "ckpt-8.shard-0-of-2",
                           "ckpt-7.shard-0-of-2.g4.tmp", "ckpt-7.index"})
    std::ofstream(d.path / name) << "x";
  CHECK(detail::newest_generation(d.path, 7) == 2);  // (a temporary file is no generation)
  CHECK(detail::newest_generation(d.path, 8) == 0);
  // server 1 of 2: its own shards of step 7 but the named one
  detail::remove_step_shards(d.path, 7, 1, 2, {"ckpt-7.shard-1-of-2.g1"});
  CHECK_FALSE(fs::exists(d.path / "ckpt-7.shard-1-of-2"));
  CHECK(fs::exists(d.path / "ckpt-7.shard-1-of-2.g1"));
  CHECK(fs::exists(d.path / "ckpt-7.shard-0-of-2"));
  // server 0 after an index of step 7, generation 1: every shard of step 7 it does not name
  detail::remove_step_shards(d.path, 7, -1, 2, {"ckpt-7.shard-0-of-2.g1", "ckpt-7.shard-1-of-2.g1"});
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(d.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"ckpt-7.index", "ckpt-7.shard-0-of-2.g1", "ckpt-7.shard-0-of-2.g4.tmp",
                                         "ckpt-7.shard-1-of-2.g1", "ckpt-8.shard-0-of-2"});
  // pruning a step removes its shards of every generation
  std::vector<std::int64_t> indexed, sharded{7, 8, 9};
  std::ofstream(d.path / "ckpt-9.shard-0-of-2") << "x";
  detail::prune_checkpoints(d.path, 1, 0, 2, indexed, sharded);  // keeps 1 + 1 steps' shards: 9 and 8
  CHECK_FALSE(fs::exists(d.path / "ckpt-7.shard-0-of-2.g1"));
  CHECK(fs::exists(d.path / "ckpt-7.shard-1-of-2.g1"));  // (another server's)
  CHECK(fs::exists(d.path / "ckpt-8.shard-0-of-2"));
}

TEST_CASE("exported .npy files have NumPy's header and the tensors' shapes", "[checkpoint][export]") {
  TempDir tmp;
  const auto layout = small_layout();
  const auto p = random_floats(22, 8);
  export_npy(tmp.path, layout, p);
  std::ifstream in(tmp.path / "w.npy", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(bytes.size() > 10);
  CHECK(bytes.substr(0, 6) == "\x93NUMPY");
  const std::size_t header = 10 + static_cast<unsigned char>(bytes[8]) + 256u * static_cast<unsigned char>(bytes[9]);
  CHECK(header % 64 == 0);
  CHECK(bytes.find("'shape': (3,5)") != std::string::npos);
  REQUIRE(bytes.size() == header + 15 * 4);
  CHECK(std::memcmp(bytes.data() + header, p.data(), 15 * 4) == 0);
  std::ifstream inb(tmp.path / "b.npy", std::ios::binary);
  std::string b((std::istreambuf_iterator<char>(inb)), {});
  CHECK(b.find("'shape': (7,)") != std::string::npos);
}

TEST_CASE("a stray file whose step does not fit an int64 is not a checkpoint (and nothing throws)", "[checkpoint]") {
  TempDir d;
  const auto layout = small_layout();
  write_checkpoint(d.path, layout, 7, 1, random_floats(22, 1), random_floats(22, 2));
  std::ofstream(d.path / "ckpt-123456789012345678901.index").put('x');
  std::ofstream(d.path / "ckpt-123456789012345678901.shard-0-of-1").put('x');
  std::vector<fs::path> all;
  REQUIRE_NOTHROW(all = list_checkpoints(d.path));
  REQUIRE(all.size() == 1);
  CHECK(all[0].filename() == "ckpt-7.index");
  CHECK(detail::parse_step("123456789012345678901") == -1);
  CHECK(detail::parse_step("42") == 42);
  CHECK(detail::parse_step("") == -1);
}

TEST_CASE("a shard header whose range wraps past 2^64 is refused, not read nor written", "[checkpoint]") {
  TempDir d;
  const auto layout = small_layout();  // 22 floats
  const auto params = random_floats(4, 3);
  // offset + count = 2^64 + 2: wraps to 2 (inside the arena) with the old check
  detail::ShardHeader h{layout.hash(), layout.size(), 5, 1, 0, ~std::uint64_t{0} - 1, 4};
  CHECK_THROWS_WITH(detail::write_shard(d.path, h, layout, params, {}), Catch::Contains("not written"));
  CHECK_FALSE(fs::exists(detail::shard_path(d.path, 5, 0, 1)));
  // crafted (a valid checksum), the same bytes the writer would have written
  detail::write_file_atomically(detail::shard_path(d.path, 5, 0, 1), detail::encode_shard(h, layout, params, {}));
  CHECK_THROWS_WITH(detail::read_shard(detail::shard_path(d.path, 5, 0, 1), layout),
                    Catch::Contains("shard range outside the arena"));
}

TEST_CASE("saving never writes through a symbolic link planted at the temporary name", "[checkpoint]") {
  TempDir d;
  const fs::path victim = d.path / "victim.txt";
  std::ofstream(victim) << "keep me";
  const fs::path target = d.path / "ckpt-3.index";
  fs::create_symlink(victim, target.string() + ".tmp");
  detail::write_file_atomically(target, "new contents");
  std::ifstream in(victim);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(kept == "keep me");
  std::ifstream out(target);
  std::string written((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  CHECK(written == "new contents");
  CHECK_FALSE(fs::exists(target.string() + ".tmp"));
}

TEST_CASE("an index naming a shard outside its directory is refused, however well its checksum reads", "[checkpoint]") {
  TempDir d;
  const auto layout = small_layout();
  const std::string too_long(256, 'x');
  for (const std::string& name : {std::string("../../etc/passwd"), std::string("/etc/passwd"), std::string(".."),
                                 std::string("sub/ckpt-1.shard-0-of-1"), std::string(""), std::string("a\nb"),
                                 std::string("a\\b"), std::string("a\0b", 3), too_long}) {
    detail::Index idx{1, 1, layout.hash(), layout.size(), {{0, layout.size(), 0, name}}};
    CHECK_THROWS_AS(detail::write_index(d.path, idx), CheckpointError);  // the writer refuses it
    CHECK_FALSE(fs::exists(detail::index_path(d.path, 1)));
    // crafted: a valid checksum, not damaged
    detail::write_file_atomically(detail::index_path(d.path, 1), detail::encode_index(idx));
    CHECK_THROWS_WITH(detail::read_index(detail::index_path(d.path, 1)),
                      Catch::Contains("not a plain file name") || Catch::Contains("a shard name of 256 bytes"));
    fs::remove(detail::index_path(d.path, 1));
  }
}

TEST_CASE("an index whose shards do not tile the arena exactly is refused", "[checkpoint]") {
  TempDir d;
  const auto layout = small_layout();  // 22 floats
  using E = detail::IndexEntry;
  const std::vector<std::vector<E>> bad = {
      {{0, 10, 0, "a"}, {12, 10, 0, "b"}},                 // a gap
      {{0, 12, 0, "a"}, {10, 12, 0, "b"}},                 // an overlap
      {{0, 10, 0, "a"}, {10, 10, 0, "b"}},                 // short of the end
      {{10, 12, 0, "a"}, {0, 10, 0, "b"}},                 // out of order
      {{0, 10, 0, "a"}, {10, ~std::uint64_t{0} - 5, 0, "b"}},  // a count that wraps
  };
  for (const auto& shards : bad) {
    detail::Index idx{1, 2, layout.hash(), layout.size(), shards};
    CHECK_THROWS_WITH(detail::write_index(d.path, idx), Catch::Contains("not written"));
    detail::write_file_atomically(detail::index_path(d.path, 1), detail::encode_index(idx));
    CHECK_THROWS_WITH(detail::read_index(detail::index_path(d.path, 1)), Catch::Contains("tile") || Catch::Contains("cover"));
  }
  detail::Index good{1, 2, layout.hash(), layout.size(), {{0, 11, 0, "a"}, {11, 11, 0, "b"}}};
  detail::write_index(d.path, good);
  CHECK(detail::read_index(detail::index_path(d.path, 1)).shards.size() == 2);
}

TEST_CASE("only regular files are read: a FIFO is refused at once, a symbolic link unless the caller named it",
          "[checkpoint]") {
  TempDir d;
  const auto layout = small_layout();
  write_checkpoint(d.path, layout, 4, 1, random_floats(22, 1), random_floats(22, 2));
  const fs::path fifo = d.path / "ckpt-9.index";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH(detail::read_index(fifo), Catch::Contains("not a regular file"));  // no writer: would block
  const fs::path link = d.path / "ckpt-8.index";
  fs::create_symlink(detail::index_path(d.path, 4), link);
  CHECK_THROWS_WITH(detail::read_index(link), Catch::Contains("a symbolic link (not followed)"));
  CHECK(detail::read_index(link, /*follow_links=*/true).step == 4);   // --restart_from may name a link
  CHECK(read_checkpoint(link, layout).global_step == 4);             // so may read_checkpoint's caller
  const fs::path shard_link = d.path / "elsewhere.shard";
  fs::rename(detail::shard_path(d.path, 4, 0, 1), shard_link);
  fs::create_symlink(shard_link, detail::shard_path(d.path, 4, 0, 1));
  CHECK_THROWS_WITH(read_checkpoint(detail::index_path(d.path, 4), layout), Catch::Contains("symbolic link"));
}

TEST_CASE("a run that does not restore answers for exactly the files it could overwrite", "[checkpoint]") {
  TempDir d;
  for (const char* name : {"ckpt-5.index", "ckpt-5.shard-0-of-2", "ckpt-5.shard-1-of-2.final", "ckpt-9.shard-0-of-3",
                           "ckpt-3.index", "ckpt-3.shard-1-of-2", "ckpt-6.shard-1-of-2.g2", "ckpt-6.shard-0-of-2.g3.final",
                           "metrics.jsonl", "asyncps.lock"})
    std::ofstream(d.path / name) << "x";
  auto names = [](std::vector<fs::path> v) {
    std::vector<std::string> out;
    for (auto& p : v) out.push_back(p.filename().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  // server 0 of 2, past step 4: the indexes, its own shards, and shards no current server writes
  CHECK(names(detail::files_past(d.path, 4, 0, 2)) ==
        std::vector<std::string>{"ckpt-5.index", "ckpt-5.shard-0-of-2", "ckpt-6.shard-0-of-2.g3.final",
                                 "ckpt-9.shard-0-of-3"});
  CHECK(names(detail::files_past(d.path, 4, 1, 2)) ==
        std::vector<std::string>{"ckpt-5.shard-1-of-2.final", "ckpt-6.shard-1-of-2.g2"});
  CHECK(names(detail::files_past(d.path, -1, 1, 2)) ==
        std::vector<std::string>{"ckpt-3.shard-1-of-2", "ckpt-5.shard-1-of-2.final", "ckpt-6.shard-1-of-2.g2"});
  CHECK(detail::files_past(d.path, 9, 0, 2).empty());
}

// ---- bounded reads -------------------------------------------------------

namespace {

// While alive, the process may map at most `headroom` bytes more than it has now: an allocation
// driven by a file's size (64 GiB) fails as std::bad_alloc instead of passing unnoticed on a
// machine with the memory. Not under the sanitizers, which map terabytes of shadow.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ASYNCPS_TEST_NO_AS_CAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define ASYNCPS_TEST_NO_AS_CAP 1
#endif
#endif
struct AddressSpaceCap {
  rlimit old{};
  bool set = false;
  explicit AddressSpaceCap(std::size_t headroom = std::size_t{512} << 20) {
#if defined(ASYNCPS_TEST_NO_AS_CAP)
    (void)headroom;
#else
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    if (!(statm >> pages) || ::getrlimit(RLIMIT_AS, &old) != 0) return;
    rlimit cap = old;
    cap.rlim_cur = std::min<rlim_t>(old.rlim_cur, pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) + headroom);
    set = ::setrlimit(RLIMIT_AS, &cap) == 0;
#endif
  }
  ~AddressSpaceCap() {
    if (set) ::setrlimit(RLIMIT_AS, &old);
  }
  // Whether an allocation of `bytes` fails now (the cap works: what it guards would be noticed).
  static bool allocation_fails(std::size_t bytes) {
    void* (*volatile allocate)(std::size_t) = &::operator new;  // (volatile: never elided)
    try {
      ::operator delete(allocate(bytes));
      return false;
    } catch (const std::bad_alloc&) {
      return true;
    }
  }
};

constexpr std::uint64_t k64GiB = std::uint64_t{64} << 30;

// A sparse file of `bytes` (costs nothing on disk).
void sparse_file(const fs::path& f, std::uint64_t bytes) {
  std::ofstream(f).put('\0');
  fs::resize_file(f, bytes);
}

void put_u32(std::string& s, std::uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& s, std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
void seal(std::string& s) { put_u64(s, detail::checksum64(s.data(), s.size())); }  // the trailing checksum
void reseal(std::string& s) {  // replaces the trailing checksum after an edit
  const std::uint64_t sum = detail::checksum64(s.data(), s.size() - 8);
  std::memcpy(s.data() + s.size() - 8, &sum, 8);
}

// A shard file's first 64 bytes as encode_shard writes them.
std::string shard_header_bytes(const ParamLayout& layout, std::uint64_t offset, std::uint64_t count, bool shadow = false) {
  std::string s("ASPSSHRD", 8);
  put_u32(s, 1);
  put_u32(s, shadow ? 1 : 0);
  put_u64(s, layout.hash());
  put_u64(s, layout.size());
  put_u64(s, 7);  // step
  put_u32(s, 1);
  put_u32(s, 0);
  put_u64(s, offset);
  put_u64(s, count);
  return s;
}

ParamLayout big_layout() {  // room in the size bound for crafted tables
  ParamLayout l;
  l.add("w", {1000});
  return l;
}

}  // namespace

TEST_CASE("a 64 GiB sparse index is refused by its size, without reading or allocating it", "[checkpoint][bounds]") {
  TempDir d;
  const fs::path huge = d.path / "ckpt-99999999.index";
  sparse_file(huge, k64GiB);
  const std::string expected = huge.string() + ": 68719476736 bytes, more than a checkpoint index can be (" +
                               std::to_string(detail::kMaxIndexBytes) + ")";
  AddressSpaceCap cap;
  if (cap.set) CHECK(AddressSpaceCap::allocation_fails(k64GiB));  // the old read (st_size bytes) would fail
  CHECK_THROWS_WITH(detail::read_index(huge), expected);
  CHECK_THROWS_WITH(detail::read_index_bytes(huge), expected);
  CHECK_THROWS_WITH(read_checkpoint(huge, small_layout()), expected);
  // the bound is a few MiB: kMaxServers entries of the longest shard name
  CHECK(detail::kMaxIndexBytes < (std::uint64_t{32} << 20));
  // an index one byte over the bound, in memory, is refused the same way
  CHECK_THROWS_WITH(detail::parse_index(std::string(detail::kMaxIndexBytes + 1, '\0'), huge),
                    Catch::Contains("more than a checkpoint index can be"));
}

TEST_CASE("a shard larger than its range's params and shadow is refused by its size, without allocating it",
          "[checkpoint][bounds]") {
  TempDir d;
  const auto layout = small_layout();
  const auto p = random_floats(22, 11);
  write_checkpoint(d.path, layout, 3, 2, p, p);  // shards of 11 floats, with the shadow
  const fs::path shard = detail::shard_path(d.path, 3, 1, 2), index = detail::index_path(d.path, 3);
  // the bound is tight: a shard with its shadow is exactly as large as one can be
  const std::uint64_t bound = detail::max_shard_bytes(layout, 11);
  CHECK(fs::file_size(shard) == bound);
  CHECK(bound == detail::kShardHeaderBytes + detail::tensor_table_bytes(layout) + 2 * 11 * 4 + 8);
  CHECK(detail::max_shard_bytes(layout, ~std::uint64_t{0}) == detail::max_shard_bytes(layout, 22));  // capped at the arena
  {
    std::ofstream(shard, std::ios::app | std::ios::binary).put('\0');  // one byte more
    CHECK_THROWS_WITH(detail::read_shard(shard, layout),
                      shard.string() + ": " + std::to_string(bound + 1) +
                          " bytes, more than a checkpoint of this layout can be (" + std::to_string(bound) + ")");
  }
  fs::resize_file(shard, k64GiB);  // the header stays: the range is known, the rest is zeros
  AddressSpaceCap cap;
  CHECK_THROWS_WITH(detail::read_shard(shard, layout),
                    shard.string() + ": 68719476736 bytes, more than a checkpoint of this layout can be (" +
                        std::to_string(bound) + ")");
  CHECK_THROWS_WITH(read_checkpoint(index, layout), Catch::Contains("68719476736 bytes, more than a checkpoint"));
  // no header at all: bounded by the whole arena
  const fs::path zeros = d.path / "zeros";
  sparse_file(zeros, k64GiB);
  CHECK_THROWS_WITH(detail::read_shard(zeros, layout),
                    Catch::Contains("more than a checkpoint of this layout can be (" +
                                    std::to_string(detail::max_shard_bytes(layout, 22)) + ")"));
}

TEST_CASE("a shard's tensor table is bounded by limits.h: tensors, name length, rank", "[checkpoint][bounds]") {
  const auto layout = big_layout();
  const fs::path f = "crafted.shard";
  auto shard_with_table = [&](const std::string& table) {
    std::string s = shard_header_bytes(layout, 0, 1000) + table;
    s.append(1000 * 4, '\0');
    seal(s);
    return s;
  };
  auto one_tensor = [](const std::string& name, std::uint32_t rank) {
    std::string t;
    put_u32(t, 1);
    put_u32(t, static_cast<std::uint32_t>(name.size()));
    t += name;
    put_u32(t, rank);
    for (std::uint32_t i = 0; i < rank; ++i) put_u64(t, 1);
    put_u64(t, 0);
    put_u64(t, 1000);
    return t;
  };
  {  // more tensors than a layout may have
    std::string t;
    put_u32(t, static_cast<std::uint32_t>(limits::kMaxTensors + 1));
    CHECK_THROWS_WITH(detail::parse_shard(shard_with_table(t), f, layout),
                      Catch::Contains("a table of 1048577 tensors, more than 1048576"));
  }
  CHECK_THROWS_WITH(detail::parse_shard(shard_with_table(one_tensor(std::string(limits::kMaxTensorNameBytes + 1, 'n'), 1)), f, layout),
                    Catch::Contains("a tensor name of " + std::to_string(limits::kMaxTensorNameBytes + 1) + " bytes, more than " +
                                    std::to_string(limits::kMaxTensorNameBytes)));
  CHECK_THROWS_WITH(detail::parse_shard(shard_with_table(one_tensor("w", limits::kMaxTensorRank + 1)), f, layout),
                    Catch::Contains("dimensions, more than " + std::to_string(limits::kMaxTensorRank)));
  CHECK_THROWS_WITH(detail::parse_shard(shard_with_table(one_tensor("a/b", 1)), f, layout), Catch::Contains("contains '/'"));
  // a name of the longest length and a tensor of the highest rank are read (the table is not compared
  // with the layout: the header's layout hash is)
  CHECK_NOTHROW(detail::parse_shard(shard_with_table(one_tensor(std::string(limits::kMaxTensorNameBytes, 'n'),
                                                                limits::kMaxTensorRank)), f, layout));
  // the table as encode_shard writes it reads back
  const auto p = random_floats(1000, 1);
  const detail::ShardHeader h{layout.hash(), layout.size(), 7, 1, 0, 0, 1000};
  CHECK(detail::parse_shard(detail::encode_shard(h, layout, p, {}), f, layout).params == p);
}

TEST_CASE("an index is bounded by limits.h: servers, shard names", "[checkpoint][bounds]") {
  const fs::path f = "crafted.index";
  auto index_with = [](std::uint32_t servers, const std::string& name) {
    std::string s("ASPSINDX", 8);
    put_u32(s, 1);
    put_u32(s, servers);
    put_u64(s, 1);   // hash
    put_u64(s, 10);  // arena
    put_u64(s, 5);   // step
    put_u64(s, 0);
    put_u64(s, 10);
    put_u64(s, 0);
    put_u32(s, static_cast<std::uint32_t>(name.size()));
    s += name;
    seal(s);
    return s;
  };
  CHECK(detail::parse_index(index_with(1, "ckpt-5.shard-0-of-1"), f).shards.size() == 1);
  CHECK_THROWS_WITH(detail::parse_index(index_with(limits::kMaxServers + 1, "x"), f),
                    Catch::Contains("65537 servers, not in [1, 65536]"));
  CHECK_THROWS_WITH(detail::parse_index(index_with(0, "x"), f), Catch::Contains("0 servers"));
  CHECK_THROWS_WITH(detail::parse_index(index_with(1, std::string(256, 'x')), f),
                    Catch::Contains("a shard name of 256 bytes, more than 255"));
  CHECK(detail::parse_index(index_with(1, std::string(255, 'x')), f).shards[0].file.size() == 255);
  // kMaxServers entries claimed, one present: truncated, and nothing sized by the claim
  CHECK_THROWS_WITH(detail::parse_index(index_with(limits::kMaxServers, "x"), f), Catch::Contains("truncated"));
}

TEST_CASE("the writers refuse what the readers refuse: what is written always reads back", "[checkpoint][bounds]") {
  TempDir d;
  const auto layout = small_layout();
  const auto p = random_floats(22, 5);
  using H = detail::ShardHeader;
  const std::vector<std::pair<H, const char*>> bad = {
      {H{layout.hash() ^ 1, 22, 1, 1, 0, 0, 22}, "another layout"},
      {H{layout.hash(), 23, 1, 1, 0, 0, 22}, "another layout"},
      {H{layout.hash(), 22, -1, 1, 0, 0, 22}, "negative"},
      {H{layout.hash(), 22, 1, 0, 0, 0, 22}, "server 0 of 0"},
      {H{layout.hash(), 22, 1, 2, 2, 0, 22}, "server 2 of 2"},
      {H{layout.hash(), 22, 1, 65537, 0, 0, 22}, "server 0 of 65537"},
      {H{layout.hash(), 22, 1, 1, 0, 1, 22}, "outside the arena"},
  };
  for (const auto& [h, why] : bad) {
    CHECK_THROWS_WITH(detail::write_shard(d.path, h, layout, std::span(p).first(std::min<std::size_t>(h.count, 22)), {}),
                      Catch::Contains("not written") && Catch::Contains(why));
    // and the reader refuses the same header
    CHECK_THROWS_AS(detail::parse_shard(detail::encode_shard(h, layout, std::span(p).first(std::min<std::size_t>(h.count, 22)), {}),
                                        "x", layout),
                    CheckpointError);
  }
  CHECK(fs::is_empty(d.path));
  // params or a shadow of another length than the header's count
  CHECK_THROWS_WITH(detail::write_shard(d.path, H{layout.hash(), 22, 1, 1, 0, 0, 21}, layout, p, {}),
                    Catch::Contains("not written") && Catch::Contains("count of floats"));
  CHECK_THROWS_WITH(detail::write_shard(d.path, H{layout.hash(), 22, 1, 1, 0, 0, 22}, layout, p, std::span(p).first(3)),
                    Catch::Contains("not written"));
  // the index: servers that do not match its entries
  detail::Index idx{4, 2, layout.hash(), 22, {{0, 22, 0, "a"}}};
  CHECK_THROWS_WITH(detail::write_index(d.path, idx), Catch::Contains("not written"));
  CHECK(fs::is_empty(d.path));
  // A tensor a reader refuses cannot be checkpointed: ParamLayout::add refuses it, or the writer does.
  auto writer_refuses = [&](const std::string& name, std::vector<std::int64_t> shape) {
    ParamLayout l;
    try {
      l.add(name, shape);
    } catch (const ConfigError&) {
      return true;  // refused at add: no checkpoint can ever hold it
    }
    const std::vector<float> q(l.size(), 1.f);
    try {
      detail::write_shard(d.path, H{l.hash(), l.size(), 1, 1, 0, 0, l.size()}, l, q, {});
    } catch (const CheckpointError& e) {
      return std::string(e.what()).find("not written") != std::string::npos;
    }
    return false;
  };
  CHECK(writer_refuses(std::string(limits::kMaxTensorNameBytes + 1, 'n'), {1}));
  CHECK(writer_refuses("a/b", {1}));
  CHECK(writer_refuses("..", {1}));
  CHECK(writer_refuses("t", std::vector<std::int64_t>(limits::kMaxTensorRank + 1, 1)));
  // and at the limits it writes, and reads back
  ParamLayout edge;
  edge.add(std::string(limits::kMaxTensorNameBytes, 'n'), std::vector<std::int64_t>(limits::kMaxTensorRank, 1));
  edge.add("b", {3});
  const std::vector<float> q = {1, 2, 3, 4};
  const std::uint64_t sum = detail::write_shard(d.path, H{edge.hash(), 4, 9, 1, 0, 0, 4}, edge, q, q);
  const auto back = detail::read_shard(detail::shard_path(d.path, 9, 0, 1), edge);
  CHECK(back.checksum == sum);
  CHECK(back.params == q);
  CHECK(back.shadow == q);
}

TEST_CASE("parse_shard and parse_index throw only CheckpointError on damaged, truncated and random bytes",
          "[checkpoint][bounds][fuzz]") {
  const auto layout = small_layout();
  const auto p = random_floats(22, 9);
  const std::string shard = detail::encode_shard(detail::ShardHeader{layout.hash(), 22, 5, 2, 1, 11, 11}, layout,
                                                 std::span(p).subspan(11), std::span(p).first(11));
  const std::string index = detail::encode_index(
      detail::Index{5, 2, layout.hash(), 22, {{0, 11, 1, "ckpt-5.shard-0-of-2"}, {11, 11, 2, "ckpt-5.shard-1-of-2"}}});
  REQUIRE_NOTHROW(detail::parse_shard(shard, "s", layout));
  REQUIRE_NOTHROW(detail::parse_index(index, "i"));
  std::size_t other = 0, accepted = 0, refused = 0;
  std::string last_other;
  auto attempt = [&](const std::string& bytes) {
    for (int which = 0; which < 2; ++which) try {
        if (which == 0) detail::parse_shard(bytes, "s", layout);
        else detail::parse_index(bytes, "i");
        ++accepted;
      } catch (const CheckpointError& e) {
        ++refused;
        if (std::string(e.what()).rfind(which == 0 ? "s: " : "i: ", 0) != 0) {  // the file is named first
          ++other;
          last_other = e.what();
        }
      } catch (const std::exception& e) {
        ++other;
        last_other = std::string("not a CheckpointError: ") + e.what();
      } catch (...) {
        ++other;
        last_other = "not a std::exception";
      }
  };
  for (const std::string* valid : {&shard, &index})
    for (std::size_t n = 0; n <= valid->size(); ++n) attempt(valid->substr(0, n));  // every truncation
  std::mt19937_64 rng(2024);
  auto any = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  for (int round = 0; round < 20000; ++round) {
    std::string b = round % 2 ? shard : index;
    const int edits = 1 + static_cast<int>(any(8));
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = any(b.size());
      switch (any(5)) {
        case 0: b[at] = static_cast<char>(b[at] ^ (1 << any(8))); break;                        // a bit
        case 1: b[at] = static_cast<char>(rng()); break;                                         // a byte
        case 2: {                                                                                // a field
          const std::uint64_t v = any(3) == 0 ? ~std::uint64_t{0} >> any(64) : rng();
          std::memcpy(b.data() + at, &v, std::min<std::size_t>(any(2) ? 4 : 8, b.size() - at));
          break;
        }
        case 3: b.insert(at, std::string(any(64), static_cast<char>(rng()))); break;              // bytes in
        default: b.erase(at, any(64)); break;                                                      // bytes out
      }
      if (b.size() < 9) b = round % 2 ? shard : index;
    }
    if (round % 3 != 0) reseal(b);  // most with a valid checksum, so that the checks behind it are reached
    attempt(b);
  }
  for (int round = 0; round < 2000; ++round) {  // random bytes, some behind a valid magic
    std::string b(any(512), '\0');
    for (auto& c : b) c = static_cast<char>(rng());
    if (round % 2 && b.size() >= 16) std::memcpy(b.data(), round % 4 == 1 ? "ASPSSHRD\1\0\0\0" : "ASPSINDX\1\0\0\0", 12);
    if (b.size() >= 8) reseal(b);
    attempt(b);
  }
  INFO("last: " << last_other);
  CHECK(other == 0);
  CHECK(refused > 0);
  CHECK(accepted >= 2);  // (the untruncated originals, each by its own parser)
}

// ---- every failure in a skip path is a skip --------------------------------------------------

namespace {
struct CapturedLog {
  std::vector<std::string> warnings;
  CapturedLog() {
    set_log_sink([this](LogLevel level, std::string_view text) {
      if (level == LogLevel::Warning) warnings.emplace_back(text);
    });
  }
  ~CapturedLog() { set_log_sink({}); }
};
}  // namespace

TEST_CASE("the restore skips a candidate that fails in any way, with one warning naming it", "[checkpoint][skip]") {
  TempDir d;
  const auto layout = small_layout();
  const auto p = random_floats(22, 12);
  for (int step : {10, 20, 30, 40}) write_checkpoint(d.path, layout, step, 1, p, p);
  sparse_file(detail::index_path(d.path, 99999999), k64GiB);  // refused by its size
  CheckpointOptions co;
  co.dir = d.path;
  auto reader = [&](const fs::path& f, bool follow) -> std::string {
    const std::string name = f.filename().string();
    if (name == "ckpt-40.index") throw std::bad_alloc();
    if (name == "ckpt-30.index")
      throw fs::filesystem_error("directory entry vanished", f, std::make_error_code(std::errc::no_such_file_or_directory));
    if (name == "ckpt-20.index") throw std::length_error("basic_string::_M_create");
    return detail::read_index_bytes(f, follow);
  };
  {
    CapturedLog log;
    AddressSpaceCap cap;
    const detail::Candidates c = detail::find_candidates(co, layout, reader);
    CHECK(c.fatal.empty());
    REQUIRE(c.items.size() == 2);  // (path, bytes) of ckpt-10
    CHECK(fs::path(c.items[0]).filename() == "ckpt-10.index");
    REQUIRE(log.warnings.size() == 4);
    CHECK_THAT(log.warnings[0], Catch::StartsWith("skipping damaged checkpoint: " +
                                                  detail::index_path(d.path, 99999999).string() + ": 68719476736 bytes"));
    CHECK_THAT(log.warnings[1], Catch::Contains(detail::index_path(d.path, 40).string() + ": std::bad_alloc"));
    CHECK_THAT(log.warnings[2], Catch::Contains("ckpt-30.index") && Catch::Contains("vanished"));
    CHECK_THAT(log.warnings[3], Catch::Contains(detail::index_path(d.path, 20).string() + ": basic_string"));
  }
  {  // the real reader: the huge one skipped, the newest real one found
    CapturedLog log;
    const detail::Candidates c = detail::find_candidates(co, layout);
    REQUIRE(c.items.size() == 8);
    CHECK(fs::path(c.items[0]).filename() == "ckpt-40.index");
    CHECK(log.warnings.size() == 1);
  }
  {  // every candidate failing is one fatal verdict (rank 0 broadcasts it), never a throw
    CapturedLog log;
    const auto c = detail::find_candidates(co, layout, [](const fs::path&, bool) -> std::string {
      throw std::system_error(std::make_error_code(std::errc::io_error), "read");
    });
    CHECK(c.items.empty());
    CHECK_THAT(c.fatal, Catch::Contains("5 checkpoint(s) found and none is valid"));
    CHECK(log.warnings.size() == 5);
  }
  {  // restart_from: its failure, of any kind, is the verdict, naming the option and the file
    CapturedLog log;
    co.restart_from = detail::index_path(d.path, 40);
    const auto c = detail::find_candidates(co, layout, reader);
    CHECK(c.fatal == "Options::checkpoint.restart_from: " + co.restart_from.string() + ": std::bad_alloc");
    CHECK(log.warnings.empty());
  }
}

TEST_CASE("a server's load of its range reports any failure as a reason, never a throw", "[checkpoint][skip]") {
  TempDir d;
  const auto layout = small_layout();
  const auto p = random_floats(22, 13), s = random_floats(22, 14);
  write_checkpoint(d.path, layout, 8, 2, p, s);
  const detail::Index idx = detail::read_index(detail::index_path(d.path, 8));
  const Shard mine{0, 5, 12};  // spans both shards of the 2-server save
  detail::RestoredShard out;
  CHECK(detail::load_range(idx, d.path, layout, mine, RowPlan(), 0, out) == "");
  CHECK(out.params == std::vector<float>(p.begin() + 5, p.begin() + 17));
  CHECK(out.shadow == std::vector<float>(s.begin() + 5, s.begin() + 17));
  CHECK(out.has_shadow);
  const auto fails = detail::load_range(idx, d.path, layout, mine, RowPlan(), 0, out, [](const fs::path& f, const ParamLayout& l) {
    if (f.filename() == "ckpt-8.shard-1-of-2") throw std::bad_alloc();
    return detail::read_shard(f, l);
  });
  CHECK(fails == detail::shard_path(d.path, 8, 1, 2).string() + ": std::bad_alloc");
  fs::resize_file(detail::shard_path(d.path, 8, 0, 2), k64GiB);
  AddressSpaceCap cap;
  CHECK_THAT(detail::load_range(idx, d.path, layout, mine, RowPlan(), 0, out),
             Catch::StartsWith(detail::shard_path(d.path, 8, 0, 2).string() + ": 68719476736 bytes"));
  CHECK_THAT(detail::load_range(idx, d.path, layout, Shard{0, 20, 5}, RowPlan(), 0, out), Catch::Contains("outside"));
}

TEST_CASE("listing, pruning and moving aside never throw for a directory that is missing or not a directory",
          "[checkpoint][skip]") {
  TempDir d;
  std::ofstream(d.path / "plain-file") << "x";
  for (const fs::path& dir : {d.path / "none", d.path / "plain-file"}) {
    std::vector<fs::path> found;
    CHECK_NOTHROW(found = list_checkpoints(dir));
    CHECK(found.empty());
    std::vector<std::int64_t> indexed{1, 2, 3}, sharded{1, 2, 3};
    CHECK_NOTHROW(detail::prune_checkpoints(dir, 1, 0, 1, indexed, sharded));
  }
  CHECK(detail::files_past(d.path / "none", -1, 0, 1).empty());       // nothing there to overwrite
  CHECK_THROWS_AS(detail::files_past(d.path / "plain-file", -1, 0, 1), Error);  // cannot know: an error
}

// ---- names that become paths ------------------------------------------------------------------

TEST_CASE("export_npy checks every tensor name before writing any file", "[checkpoint][export]") {
  TempDir d;
  ParamLayout l;
  l.add("ok", {2});
  const std::vector<std::string> bad = {"a/b", "..", std::string(252, 'n')};  // the last: 256 bytes with ".npy"
  bool any_added = false;
  for (const auto& name : bad) {
    ParamLayout with = l;
    try {
      with.add(name, {1});
    } catch (const ConfigError&) {
      continue;  // ParamLayout::add refuses it already
    }
    any_added = true;
    const std::vector<float> arena(with.size(), 1.f);
    CHECK_THROWS_AS(export_npy(d.path / "out", with, arena), ConfigError);
    CHECK_FALSE(fs::exists(d.path / "out"));
  }
  (void)any_added;
  // the longest name that fits a file name exports
  ParamLayout longest;
  longest.add(std::string(251, 'n'), {2});
  export_npy(d.path / "out", longest, {1.f, 2.f});
  CHECK(fs::exists(d.path / "out" / (std::string(251, 'n') + ".npy")));
  CHECK(std::distance(fs::directory_iterator(d.path / "out"), fs::directory_iterator()) == 1);  // no temporary left
}

// ---- CheckpointOptions ----------------------------------------------------------------------------

TEST_CASE("validate(CheckpointOptions) refuses options no job can run with, naming the field", "[checkpoint][options]") {
  CheckpointOptions ok;
  CHECK_NOTHROW(validate(ok));
  ok.dir = "log";
  ok.restart_from = "log/ckpt-5.index";
  ok.keep = 1;
  ok.save_secs = 0;
  CHECK_NOTHROW(validate(ok));
  ok.keep = limits::kMaxCheckpointsKept;
  ok.save_secs = limits::kMaxSeconds;
  CHECK_NOTHROW(validate(ok));
  auto refused = [](auto edit) {
    CheckpointOptions o;
    o.dir = "log";
    edit(o);
    try {
      validate(o);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // keep 0 would delete the final checkpoint right after writing it: one clear line
  const std::string keep0 = refused([](CheckpointOptions& o) { o.keep = 0; });
  CHECK_THAT(keep0, Catch::StartsWith("Options::checkpoint.keep must be in [1, 1000000]") && Catch::EndsWith("got 0"));
  CHECK(keep0.find('\n') == std::string::npos);
  CHECK_THAT(refused([](CheckpointOptions& o) { o.keep = -3; }), Catch::StartsWith("Options::checkpoint.keep"));
  CHECK_THAT(refused([](CheckpointOptions& o) { o.keep = limits::kMaxCheckpointsKept + 1; }),
             Catch::StartsWith("Options::checkpoint.keep"));
  for (double bad : {-1.0, 2e9, std::nan(""), HUGE_VAL, -HUGE_VAL})
    CHECK_THAT(refused([bad](CheckpointOptions& o) { o.save_secs = bad; }),
               Catch::StartsWith("Options::checkpoint.save_secs must be"));
  CHECK_THAT(refused([](CheckpointOptions& o) { o.dir = std::string("lo\0g", 4); }),
             Catch::StartsWith("Options::checkpoint.dir contains a NUL byte"));
  CHECK_THAT(refused([](CheckpointOptions& o) { o.restart_from = std::string("a\0b", 3); }),
             Catch::StartsWith("Options::checkpoint.restart_from contains a NUL byte"));
  // without a directory nothing is saved: an interval or a count kept would change nothing
  CHECK_THAT(refused([](CheckpointOptions& o) { o.dir.clear(); o.save_secs = 5; }),
             Catch::Equals("Options::checkpoint.save_secs has no effect without Options::checkpoint.dir (nothing is "
                           "saved), got 5"));
  CHECK_THAT(refused([](CheckpointOptions& o) { o.dir.clear(); o.keep = 3; }),
             Catch::StartsWith("Options::checkpoint.keep has no effect without Options::checkpoint.dir"));
  CHECK(refused([](CheckpointOptions& o) { o.dir.clear(); o.restart_from = "log/ckpt-5.index"; }) == "accepted");
  // start afresh: nothing to restore without a directory; a checkpoint to start from contradicts it
  CHECK_THAT(refused([](CheckpointOptions& o) { o.dir.clear(); o.restore = false; }),
             Catch::StartsWith("Options::checkpoint.restore set to start afresh has no effect without "
                               "Options::checkpoint.dir"));
  CHECK_THAT(refused([](CheckpointOptions& o) { o.restore = false; o.restart_from = "log/ckpt-5.index"; }),
             Catch::StartsWith("Options::checkpoint.restart_from names a checkpoint to start from, which contradicts "
                               "Options::checkpoint.restore set to start afresh"));
  CHECK(refused([](CheckpointOptions& o) { o.dir = "log"; o.restore = false; }) == "accepted");
}
