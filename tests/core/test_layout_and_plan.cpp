// Unit tests of ParamLayout and ShardPlan (no MPI traffic).
#include <catch2/catch.hpp>

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
