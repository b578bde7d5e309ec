// Proves: a checkpoint of a layout with embedding tables holds every row (values and Adagrad
// accumulators) once, each server's share in its shard; read_checkpoint gathers them whole from
// any number of servers; a server of a run with another number of servers loads exactly its new
// row range (re-shard by row range) and its arena range; export_checkpoint_npy writes the tables
// with their shapes; a rows section that is not the server's share, a wrong number of tables, a
// flipped row byte or a foreign layout is refused with the file named; write_shard refuses rows
// that are not the server's share.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "asyncps_internal/checkpoint/checkpoint_format.h"
#include "asyncps_internal/checkpoint/checkpointer.h"
#include "asyncps/checkpoint.h"
#include "asyncps/error.h"
#include "asyncps/roles.h"

using namespace asyncps;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("asyncps-table-ckpt-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

ParamLayout tables_layout() {
  ParamLayout l;
  l.add("w", {4, 3});
  l.add("b", {5});                                                            // 17 floats
  l.add_table("user", {.rows = 37, .dim = 3});                                 // Sgd: stride 3
  l.add_table("item", {.rows = 10, .dim = 2, .optimizer = RowOptimizer::Adagrad});  // stride 3
  return l;
}

// Every table's rows as one server holding them all would (RowPlan(layout, 1)), distinct values.
std::vector<float> all_rows(const ParamLayout& layout) {
  const RowPlan one(layout, 1);
  std::vector<float> v(one.server_floats(0));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5f + static_cast<float>(i);
  return v;
}

// Server `server`'s rows of `global` (laid out as all_rows) under `plan`.
std::vector<float> share(const ParamLayout& layout, const std::vector<float>& global, const RowPlan& plan, int server) {
  const RowPlan one(layout, 1);
  std::vector<float> out(plan.server_floats(server));
  for (std::size_t t = 0; t < layout.tables().size(); ++t) {
    const auto& part = plan.part(t, server);
    const auto stride = static_cast<std::size_t>(plan.stride(t));
    std::copy_n(global.begin() + static_cast<std::ptrdiff_t>(one.offset_of(t, 0, part.first_row)), part.rows * stride,
                out.begin() + static_cast<std::ptrdiff_t>(part.offset));
  }
  return out;
}

void write_checkpoint(const fs::path& dir, const ParamLayout& layout, std::int64_t step, int servers,
                      const std::vector<float>& params, const std::vector<float>& rows) {
  const ShardPlan plan(layout.size(), servers);
  const RowPlan row_plan(layout, servers);
  detail::Index idx{step, static_cast<std::uint32_t>(servers), layout.hash(), layout.size(), {}};
  for (const auto& sh : plan.shards()) {
    const detail::ShardHeader h{layout.hash(), layout.size(), step, static_cast<std::uint32_t>(servers),
                                static_cast<std::uint32_t>(sh.server), sh.offset, sh.size};
    const auto mine = share(layout, rows, row_plan, sh.server);
    const auto sum = detail::write_shard(dir, h, layout, std::span(params).subspan(sh.offset, sh.size), {}, mine);
    idx.shards.push_back({sh.offset, sh.size, sum, detail::shard_path({}, step, sh.server, servers).string()});
  }
  detail::write_index(dir, idx);
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `bytes` with its trailing checksum made right again (a crafted file, not a damaged one).
std::string rechecksum(std::string bytes) {
  const std::uint64_t sum = detail::checksum64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  return bytes;
}

}  // namespace

TEST_CASE("read_checkpoint gathers every table's rows and accumulators whole, from any number of servers",
          "[checkpoint][tables]") {
  TempDir d;
  const auto layout = tables_layout();
  std::vector<float> params(layout.size());
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = -1.f - static_cast<float>(i);
  const auto rows = all_rows(layout);
  for (int servers : {1, 2, 3, 5}) {
    write_checkpoint(d.path, layout, servers, servers, params, rows);
    const CheckpointData c = read_checkpoint(detail::index_path(d.path, servers), layout);
    CHECK(c.params == params);
    REQUIRE(c.tables.size() == 2);
    CHECK(c.tables[0].name == "user");
    CHECK(c.tables[0].rows == 37);
    CHECK(c.tables[0].dim == 3);
    CHECK(c.tables[0].accumulators.empty());
    CHECK(c.tables[1].accumulators.size() == 10);
    // row r of table t is at one.offset_of(t, 0, r): values, then the accumulator
    const RowPlan one(layout, 1);
    bool same = true;
    for (std::size_t t = 0; t < 2; ++t)
      for (std::uint64_t r = 0; r < layout.tables()[t].spec.rows; ++r) {
        const float* want = rows.data() + one.offset_of(t, 0, r);
        const int dim = layout.tables()[t].spec.dim;
        for (int c2 = 0; c2 < dim; ++c2) same = same && c.tables[t].values[r * dim + c2] == want[c2];
        if (t == 1) same = same && c.tables[t].accumulators[r] == want[dim];
      }
    CHECK(same);
  }
}

TEST_CASE("a server of a run with another number of servers loads exactly its new rows (re-shard by row range)",
          "[checkpoint][tables]") {
  TempDir d;
  const auto layout = tables_layout();
  std::vector<float> params(layout.size());
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(i) * 0.25f;
  const auto rows = all_rows(layout);
  for (int saved : {1, 2, 3}) {
    write_checkpoint(d.path, layout, 10 + saved, saved, params, rows);
    const detail::Index idx = detail::read_index(detail::index_path(d.path, 10 + saved));
    for (int now : {1, 2, 4, 7}) {
      const ShardPlan plan(layout.size(), now);
      const RowPlan row_plan(layout, now);
      for (int s = 0; s < now; ++s) {
        detail::RestoredShard out;
        const Shard& mine = plan.shard(s);
        INFO("saved by " << saved << " servers, restored by " << now << ", server " << s);
        REQUIRE(detail::load_range(idx, d.path, layout, mine, row_plan, s, out) == "");
        CHECK(out.rows == share(layout, rows, row_plan, s));
        CHECK(out.params == std::vector<float>(params.begin() + static_cast<std::ptrdiff_t>(mine.offset),
                                               params.begin() + static_cast<std::ptrdiff_t>(mine.offset + mine.size)));
      }
    }
  }
}

TEST_CASE("export_checkpoint_npy writes each table as rows x dim and Adagrad's accumulators", "[checkpoint][tables]") {
  TempDir d;
  const auto layout = tables_layout();
  write_checkpoint(d.path, layout, 3, 2, std::vector<float>(layout.size(), 1.f), all_rows(layout));
  const CheckpointData c = read_checkpoint(detail::index_path(d.path, 3), layout);
  export_checkpoint_npy(d.path / "out", layout, c);
  for (const auto& [name, shape, floats] : {std::tuple{"user.npy", "(37,3)", 111}, std::tuple{"item.npy", "(10,2)", 20},
                                            std::tuple{"item.accumulator.npy", "(10,)", 10}, std::tuple{"w.npy", "(4,3)", 12}}) {
    INFO(name);
    const std::string bytes = slurp(d.path / "out" / name);
    REQUIRE(bytes.size() == 128 + static_cast<std::size_t>(floats) * 4);  // header padded to 64 bytes: 128 here
    CHECK(bytes.find(std::string("'shape': ") + shape) != std::string::npos);
  }
  float first_acc = 0;
  std::memcpy(&first_acc, slurp(d.path / "out" / "item.accumulator.npy").data() + 128, 4);
  CHECK(first_acc == c.tables[1].accumulators[0]);
  // a tensor named like a table's accumulator file: refused before anything is written
  ParamLayout clash;
  clash.add("item.accumulator", {1});
  clash.add_table("item", {.rows = 2, .dim = 1, .optimizer = RowOptimizer::Adagrad});
  CheckpointData cc;
  cc.params = {0.f};
  cc.tables.push_back({"item", 2, 1, {0.f, 0.f}, {0.1f, 0.1f}});
  CHECK_THROWS_WITH(export_checkpoint_npy(d.path / "clash", clash, cc), Catch::Contains("item.accumulator.npy"));
  CHECK_FALSE(fs::exists(d.path / "clash"));
  cc.tables[0].values.pop_back();  // not read_checkpoint's of this layout
  CHECK_THROWS_AS(export_checkpoint_npy(d.path / "clash", clash, cc), Error);
}

TEST_CASE("a rows section that is not the server's share, or is damaged, is refused naming the file",
          "[checkpoint][tables]") {
  TempDir d;
  const auto layout = tables_layout();
  const std::vector<float> params(layout.size(), 2.f);
  const auto rows = all_rows(layout);
  const RowPlan plan(layout, 2);
  const detail::ShardHeader h{layout.hash(), layout.size(), 4, 2, 1, 9, 8};
  const auto mine = share(layout, rows, plan, 1);
  const fs::path f = "crafted.shard";
  const std::string good = detail::encode_shard(h, layout, std::span(params).subspan(9, 8), {}, mine);
  CHECK(detail::parse_shard(good, f, layout).rows == mine);
  // the section starts after the header, the tensor table and the 8 parameters
  const std::size_t at = detail::kShardHeaderBytes + detail::tensor_table_bytes(layout) + 8 * 4;
  {  // a table count that is not the layout's
    std::string b = good;
    const std::uint32_t three = 3;
    std::memcpy(b.data() + at, &three, 4);
    CHECK_THROWS_WITH(detail::parse_shard(rechecksum(b), f, layout),
                      Catch::Contains("crafted.shard") && Catch::Contains("rows section of 3 tables"));
  }
  {  // a first row that is not server 1's
    std::string b = good;
    const std::uint64_t zero = 0;
    std::memcpy(b.data() + at + 4, &zero, 8);
    CHECK_THROWS_WITH(detail::parse_shard(rechecksum(b), f, layout), Catch::Contains("table 'user': rows [0, +18)"));
  }
  {  // a flipped byte in a row: the checksum
    std::string b = good;
    b[b.size() - 20] ^= 0x10;
    CHECK_THROWS_WITH(detail::parse_shard(b, f, layout), Catch::Contains("checksum mismatch"));
  }
  {  // the rows cut short
    const std::string b = detail::encode_shard(h, layout, std::span(params).subspan(9, 8), {},
                                               std::span(mine).first(mine.size() - 1));
    CHECK_THROWS_AS(detail::parse_shard(b, f, layout), CheckpointError);
  }
  // a layout without the tables reads it as another model's, and the other way round
  ParamLayout dense;
  dense.add("w", {4, 3});
  dense.add("b", {5});
  CHECK_THROWS_WITH(detail::parse_shard(good, f, dense), Catch::Contains("another model"));
  const std::string plain = detail::encode_shard({dense.hash(), dense.size(), 4, 1, 0, 0, 17}, dense, params, {});
  CHECK_THROWS_WITH(detail::parse_shard(plain, f, layout), Catch::Contains("another model"));
  // the writer refuses rows that are not the server's share
  CHECK_THROWS_WITH(detail::write_shard(d.path, h, layout, std::span(params).subspan(9, 8), {}, rows),
                    Catch::Contains("not written") && Catch::Contains("server 1 of 2 holds"));
  CHECK_THROWS_WITH(detail::write_shard(d.path, h, layout, std::span(params).subspan(9, 8), {}, {}),
                    Catch::Contains("not written"));
  CHECK(fs::is_empty(d.path));
}
