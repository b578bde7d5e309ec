// Unit tests of ParamLayout and ShardPlan (no MPI traffic).
#include <catch2/catch.hpp>

#include <algorithm>

#include "asyncps/embedding_table.h"
#include "asyncps/error.h"
#include "asyncps/param_layout.h"
#include "asyncps/roles.h"

using namespace asyncps;

TEST_CASE("layout packs tensors contiguously in the order they were added", "[layout]") {
  ParamLayout l;
  CHECK(l.add("w", {3, 3, 1, 8}) == 0);
  CHECK(l.add("b", {8}) == 72);
  CHECK(l.add("fc", {784, 10}) == 80);
  CHECK(l.size() == 7920);
  CHECK(l.bytes() == 7920 * 4);
  CHECK(l.tensor("b").size == 8);
  std::vector<float> arena(l.size());
  auto v = l.view(std::span<float>(arena), "fc");
  CHECK(v.data() == arena.data() + 80);
  CHECK(v.size() == 7840);
}

TEST_CASE("layout rejects empty names, duplicates and non-positive dimensions", "[layout]") {
  ParamLayout l;
  l.add("w", {2});
  CHECK_THROWS_AS(l.add("w", {3}), ConfigError);
  CHECK_THROWS_AS(l.add("", {3}), ConfigError);
  CHECK_THROWS_AS(l.add("z", {3, 0}), ConfigError);
  CHECK_THROWS_AS(l.tensor("nope"), ConfigError);
}

TEST_CASE("layout hash is a fixed value and changes with names, shapes and order", "[layout]") {
  auto make = [](std::vector<std::pair<std::string, std::vector<std::int64_t>>> ts) {
    ParamLayout l;
    for (auto& [n, s] : ts) l.add(n, s);
    return l.hash();
  };
  // Pinned values. This is the on-disk format's layout hash: every checkpoint index and shard
  // header stores it and a restore refuses a checkpoint whose hash differs, so it must not
  // change silently (between builds, compilers, hosts or refactors) or every saved checkpoint
  // becomes unreadable. (FNV-1a 64 over: name, 0, each dimension as 8 little-endian bytes, 0.)
  CHECK(ParamLayout{}.hash() == 0xcbf29ce484222325ull);  // nothing mixed in: the FNV offset basis
  const std::uint64_t h = make({{"a", {2, 3}}, {"b", {4}}});
  CHECK(h == 0x1d4845b0a75c8db3ull);
  CHECK(make({{"fc_w", {784, 10}}, {"fc_b", {10}}}) == 0x38e0f18263d8c381ull);
  // any change to the layout gives another hash
  CHECK(h != make({{"a", {3, 2}}, {"b", {4}}}));          // a shape (same size)
  CHECK(h != make({{"a", {6}}, {"b", {4}}}));             // the rank (same size)
  CHECK(h != make({{"a", {2, 3}}, {"b", {5}}}));          // a dimension
  CHECK(h != make({{"b", {4}}, {"a", {2, 3}}}));          // the order
  CHECK(h != make({{"a", {2, 3}}, {"c", {4}}}));          // a name
  CHECK(h != make({{"a", {2}}, {"b", {3, 4}}}));          // where one tensor ends
  CHECK(h != make({{"a", {2, 3}}}));                      // a tensor fewer
  CHECK(h != make({{"a", {2, 3}}, {"b", {4}}, {"c", {1}}}));  // a tensor more
}

TEST_CASE("shard plan covers the arena contiguously with sizes differing by at most one", "[plan]") {
  for (std::size_t n : {1u, 7u, 9098u, 1000003u}) {
    for (int s = 1; s <= 5; ++s) {
      ShardPlan p(n, s);
      REQUIRE(p.shards().size() == static_cast<std::size_t>(s));
      std::size_t next = 0, lo = n, hi = 0;
      for (const auto& sh : p.shards()) {
        CHECK(sh.offset == next);
        next += sh.size;
        lo = std::min(lo, sh.size);
        hi = std::max(hi, sh.size);
      }
      CHECK(next == n);
      CHECK(hi - lo <= 1);
      CHECK(p.server_of(0) == 0);
      CHECK(p.server_of(n - 1) == (n >= static_cast<std::size_t>(s) ? s - 1 : static_cast<int>(n) - 1));
    }
  }
}

TEST_CASE("a tensor larger than one share is split across servers", "[plan]") {
  ParamLayout l;
  l.add("small", {10});
  l.add("big", {1000});
  ShardPlan p(l.size(), 3);  // 1010 floats: 337, 337, 336
  const auto& big = l.tensor("big");
  CHECK(p.server_of(big.offset) == 0);
  CHECK(p.server_of(big.offset + big.size - 1) == 2);
}

TEST_CASE("roles: servers first, then workers; the first worker is the chief", "[roles]") {
  auto r = Roles::make(2, 5, 2);
  CHECK(r.is_worker());
  CHECK(r.is_chief());
  CHECK(r.worker_index() == 0);
  CHECK(r.num_workers() == 3);
  CHECK(Roles::make(1, 5, 2).is_server());
  CHECK_THROWS_WITH(Roles::make(0, 1, 1), Catch::Contains("at least 2 MPI ranks"));
  CHECK_THROWS_WITH(Roles::make(0, 3, 3), Catch::Contains("leaves no worker"));
  CHECK_THROWS_WITH(Roles::make(0, 3, 0), Catch::Contains("at least 1"));
}

TEST_CASE("tables: declared apart from the arena, refused when out of range, part of the hash", "[layout][table]") {
  ParamLayout l;
  l.add("w", {10});
  const std::uint64_t dense_hash = l.hash();
  l.add_table("emb", {.rows = 1000, .dim = 16});
  CHECK(l.size() == 10);  // the arena does not grow
  CHECK(l.tables().size() == 1);
  CHECK(l.table("emb").stride() == 16);
  CHECK(l.hash() != dense_hash);
  ParamLayout other;
  other.add("w", {10});
  other.add_table("emb", {.rows = 1001, .dim = 16});
  CHECK(other.hash() != l.hash());  // rows count
  ParamLayout ada;
  ada.add("w", {10});
  ada.add_table("emb", {.rows = 1000, .dim = 16, .optimizer = RowOptimizer::Adagrad});
  CHECK(ada.table("emb").stride() == 17);  // the accumulator rides with the row
  CHECK(ada.hash() != l.hash());
  CHECK_THROWS_WITH(l.add_table("emb", {.rows = 5, .dim = 2}), Catch::Contains("added twice"));
  CHECK_THROWS_WITH(l.add_table("w", {.rows = 5, .dim = 2}), Catch::Contains("already a tensor"));
  CHECK_THROWS_WITH(l.add("emb", {3}), Catch::Contains("already an embedding table"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 0, .dim = 2}), Catch::Contains("rows must be in"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = (std::uint64_t{1} << 36) + 1, .dim = 2}), Catch::Contains("rows must be in"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 0}), Catch::Contains("dim must be in"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .init_scale = -1}), Catch::Contains("init_scale"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .optimizer = RowOptimizer::Adagrad, .initial_accumulator = 0}),
                    Catch::Contains("initial_accumulator"));
  // FTRL: z and n (dim each) beside the row; its fields in range, and only where they do something
  ParamLayout ftrl;
  ftrl.add("w", {10});
  ftrl.add_table("emb", {.rows = 1000, .dim = 16, .optimizer = RowOptimizer::Ftrl});
  CHECK(ftrl.table("emb").stride() == 48);
  CHECK(ftrl.table("emb").state_width() == 32);
  const auto blocks = ftrl.table("emb").state_blocks();
  REQUIRE(blocks.size() == 2);
  CHECK((blocks[0].name == "ftrl_z" && blocks[0].width == 16 && blocks[1].name == "ftrl_n" && blocks[1].width == 16));
  CHECK(ftrl.hash() != ada.hash());
  ParamLayout ftrl_l1;
  ftrl_l1.add("w", {10});
  ftrl_l1.add_table("emb", {.rows = 1000, .dim = 16, .optimizer = RowOptimizer::Ftrl, .ftrl_l1 = 0.5f});
  CHECK(ftrl_l1.hash() != ftrl.hash());  // workers must agree on it
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .optimizer = RowOptimizer::Ftrl, .ftrl_l1 = -1}),
                    Catch::Contains("table 'z': FTRL's ftrl_l1 must be finite and >= 0"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .optimizer = RowOptimizer::Ftrl, .ftrl_beta = 0}),
                    Catch::Contains("ftrl_beta must be finite and > 0"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .optimizer = RowOptimizer::Ftrl, .initial_accumulator = 1}),
                    Catch::Contains("table 'z': initial_accumulator is Adagrad's: it does nothing for FTRL rows"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .optimizer = RowOptimizer::Adagrad, .ftrl_l2 = 1}),
                    Catch::Contains("ftrl_l2 is FTRL's: it does nothing for Adagrad rows"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .ftrl_beta = 2}), Catch::Contains("ftrl_beta is FTRL's: it does nothing for SGD rows"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .initial_accumulator = 1}),
                    Catch::Contains("initial_accumulator is Adagrad's: it does nothing for SGD rows"));
  // each optimizer's own fields, by name (what a program that knows its user's keywords asks)
  CHECK(row_optimizer_fields(RowOptimizer::Sgd).empty());
  CHECK(row_optimizer_fields(RowOptimizer::Adagrad) == std::vector<std::string>{"initial_accumulator"});
  CHECK(row_optimizer_fields(RowOptimizer::Ftrl) == std::vector<std::string>{"ftrl_l1", "ftrl_l2", "ftrl_beta"});
  CHECK(row_optimizer_fields(static_cast<RowOptimizer>(7)).empty());
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 5, .dim = 2, .optimizer = static_cast<RowOptimizer>(7)}),
                    Catch::Contains("unknown RowOptimizer"));
  CHECK_THROWS_WITH(l.add_table("a/b", {.rows = 5, .dim = 2}), Catch::Contains("table name"));
  CHECK_THROWS_WITH(l.table("nope"), Catch::Contains("no embedding table named"));
}

TEST_CASE("table_row hashes a key into [0, rows) and refuses a table of no rows", "[table]") {
  for (std::uint64_t key : {0ull, 1ull, 12345ull, ~0ull}) {
    CHECK(asyncps::table_row(key, 1) == 0);
    CHECK(asyncps::table_row(key, 97) < 97);
  }
  CHECK_THROWS_AS(asyncps::table_row(5, 0), asyncps::ConfigError);  // (it divided by zero: SIGFPE)
}

TEST_CASE("row plan: contiguous row ranges per server, every row on exactly one", "[plan][table]") {
  ParamLayout l;
  l.add("w", {1});
  l.add_table("a", {.rows = 10, .dim = 3});
  l.add_table("b", {.rows = 7, .dim = 2, .optimizer = RowOptimizer::Adagrad});
  const RowPlan plan(l, 3);
  // a: 4, 3, 3 rows; b: 3, 2, 2 rows (stride 3)
  CHECK(plan.part(0, 0).rows == 4);
  CHECK(plan.part(0, 2).first_row == 7);
  CHECK(plan.server_floats(0) == 4 * 3 + 3 * 3);
  CHECK(plan.server_floats(1) == 3 * 3 + 2 * 3);
  for (std::size_t t = 0; t < 2; ++t) {
    const std::uint64_t rows = l.tables()[t].spec.rows;
    for (std::uint64_t r = 0; r < rows; ++r) {
      const int s = plan.server_of(t, r);
      const RowPlan::Part& p = plan.part(t, s);
      CHECK(r >= p.first_row);
      CHECK(r < p.first_row + p.rows);
      CHECK(plan.offset_of(t, s, r) + static_cast<std::size_t>(plan.stride(t)) <= plan.server_floats(s));
    }
  }
  CHECK(plan.offset_of(1, 0, 0) == 12);  // b's rows come after a's on each server
  CHECK_THROWS(plan.server_of(0, 10));
  // more servers than rows: some hold none
  const RowPlan wide(l, 12);
  std::uint64_t total = 0;
  for (int s = 0; s < 12; ++s) total += wide.part(0, s).rows;
  CHECK(total == 10);
  CHECK(wide.part(0, 11).rows == 0);
}

TEST_CASE("row groups: share_rows_with interleaves tables' rows, refused for no earlier table or other rows",
          "[layout][plan][table]") {
  ParamLayout l;
  l.add("w", {3});
  l.add_table("wide", {.rows = 10, .dim = 1, .optimizer = RowOptimizer::Adagrad});          // stride 2
  l.add_table("alone", {.rows = 7, .dim = 3});                                              // stride 3
  l.add_table("deep", {.rows = 10, .dim = 4, .optimizer = RowOptimizer::Adagrad, .share_rows_with = "wide"});  // 5
  l.add_table("more", {.rows = 10, .dim = 2, .share_rows_with = "deep"});  // (deep's group: wide's)
  const auto& t = l.tables();
  CHECK(t[0].group == 0);
  CHECK(t[2].group == 0);
  CHECK(t[3].group == 0);
  CHECK(t[1].group == 1);
  CHECK(t[0].group_offset == 0);
  CHECK(t[2].group_offset == 2);
  CHECK(t[3].group_offset == 7);
  for (std::size_t i : {0u, 2u, 3u}) CHECK(t[i].group_stride == 9);
  CHECK(t[1].group_stride == 3);
  CHECK(t[1].group_offset == 0);
  // the refusals name the table and the reason
  CHECK_THROWS_WITH(l.add_table("x", {.rows = 10, .dim = 1, .share_rows_with = "nope"}),
                    Catch::Contains("'x'") && Catch::Contains("no earlier table"));
  CHECK_THROWS_WITH(l.add_table("y", {.rows = 11, .dim = 1, .share_rows_with = "wide"}),
                    Catch::Contains("11 rows") && Catch::Contains("'wide'") && Catch::Contains("10"));
  CHECK_THROWS_WITH(l.add_table("z", {.rows = 10, .dim = 1, .share_rows_with = "z"}), Catch::Contains("no earlier table"));
  CHECK_THROWS_WITH(l.add_table("w2", {.rows = 10, .dim = 1, .share_rows_with = "w"}), Catch::Contains("no earlier table"));
  CHECK(l.tables().size() == 4);  // (nothing added by a refusal)

  // the plan: every server's group rows hold each table's row side by side, one group row apart
  for (int servers : {1, 3}) {
    const RowPlan plan(l, servers);
    std::size_t floats = 0;
    for (int s = 0; s < servers; ++s) {
      const auto& pw = plan.part(0, s);
      CHECK(plan.part(2, s).first_row == pw.first_row);
      CHECK(plan.part(2, s).rows == pw.rows);
      CHECK(plan.part(2, s).offset == pw.offset + 2);
      CHECK(plan.part(3, s).offset == pw.offset + 7);
      for (std::uint64_t r = pw.first_row; r < pw.first_row + pw.rows; ++r) {
        CHECK(plan.offset_of(0, s, r) == pw.offset + (r - pw.first_row) * 9);
        CHECK(plan.offset_of(2, s, r) == plan.offset_of(0, s, r) + 2);
        CHECK(plan.offset_of(3, s, r) == plan.offset_of(0, s, r) + 7);
      }
      CHECK(plan.pitch(2) == 9);
      CHECK(plan.stride(2) == 5);
      CHECK(plan.pitch(1) == 3);
      // no two tables' floats overlap, and the window holds exactly them
      std::vector<int> owner(plan.server_floats(s), -1);
      for (std::size_t ti = 0; ti < t.size(); ++ti) {
        const auto& p = plan.part(ti, s);
        for (std::uint64_t r = p.first_row; r < p.first_row + p.rows; ++r)
          for (int c = 0; c < t[ti].stride(); ++c) {
            const std::size_t at = plan.offset_of(ti, s, r) + static_cast<std::size_t>(c);
            REQUIRE(at < owner.size());
            CHECK(owner[at] == -1);
            owner[at] = static_cast<int>(ti);
          }
      }
      CHECK(std::count(owner.begin(), owner.end(), -1) == 0);
      floats += plan.server_floats(s);
    }
    CHECK(floats == 10 * 9 + 7 * 3);
  }

  // sharing rows is part of the hash (the window's layout differs); a table stored alone hashes as before
  ParamLayout a, b;
  a.add_table("wide", {.rows = 10, .dim = 1});
  b.add_table("wide", {.rows = 10, .dim = 1});
  a.add_table("deep", {.rows = 10, .dim = 4});
  b.add_table("deep", {.rows = 10, .dim = 4, .share_rows_with = "wide"});
  CHECK(a.hash() != b.hash());
}
