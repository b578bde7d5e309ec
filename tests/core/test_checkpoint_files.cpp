// Proves: checkpoint files round-trip bit-exactly; a flipped byte, a truncated file, an empty
// file and a foreign layout are each detected with the file named; a checkpoint written by 2
// servers reads back whole; pruning keeps the newest; exported .npy files carry the shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <sys/stat.h>

#include "asyncps_internal/checkpoint_format.h"
#include "asyncps/checkpoint.h"
#include "asyncps/roles.h"
#include "asyncps/error.h"

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

TEST_CASE("a shard header whose range wraps past 2^64 is refused, not read", "[checkpoint]") {
  TempDir d;
  const auto layout = small_layout();  // 22 floats
  const auto params = random_floats(4, 3);
  // offset + count = 2^64 + 2: wraps to 2 (inside the arena) with the old check
  detail::ShardHeader h{layout.hash(), layout.size(), 5, 1, 0, ~std::uint64_t{0} - 1, 4};
  detail::write_shard(d.path, h, layout, params, {});
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
  for (const std::string name : {"../../etc/passwd", "/etc/passwd", "..", "sub/ckpt-1.shard-0-of-1", ""}) {
    detail::Index idx{1, 1, layout.hash(), layout.size(), {{0, layout.size(), 0, name}}};
    detail::write_index(d.path, idx);  // a valid checksum: crafted, not damaged
    CHECK_THROWS_WITH(detail::read_index(detail::index_path(d.path, 1)), Catch::Contains("not a plain file name"));
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
    detail::write_index(d.path, idx);
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
                           "ckpt-3.index", "ckpt-3.shard-1-of-2", "metrics.jsonl", "asyncps.lock"})
    std::ofstream(d.path / name) << "x";
  auto names = [](std::vector<fs::path> v) {
    std::vector<std::string> out;
    for (auto& p : v) out.push_back(p.filename().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  // server 0 of 2, past step 4: the indexes, its own shards, and shards no current server writes
  CHECK(names(detail::files_past(d.path, 4, 0, 2)) ==
        std::vector<std::string>{"ckpt-5.index", "ckpt-5.shard-0-of-2", "ckpt-9.shard-0-of-3"});
  CHECK(names(detail::files_past(d.path, 4, 1, 2)) == std::vector<std::string>{"ckpt-5.shard-1-of-2.final"});
  CHECK(names(detail::files_past(d.path, -1, 1, 2)) ==
        std::vector<std::string>{"ckpt-3.shard-1-of-2", "ckpt-5.shard-1-of-2.final"});
  CHECK(detail::files_past(d.path, 9, 0, 2).empty());
}
