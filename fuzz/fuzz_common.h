// defines: asyncps_fuzz::shard_layout, table_layout, contract, parse_as_is_and_resealed — what the checkpoint
// fuzz targets share (make_seeds writes its seed shards with shard_layout, so that their hash and
// size match)
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "asyncps/param_layout.h"
#include "asyncps_internal/checkpoint/checkpoint_format.h"

namespace asyncps_fuzz {

inline asyncps::ParamLayout shard_layout() {
  asyncps::ParamLayout l;
  l.add("w", {3, 5});
  l.add("b", {7});
  return l;  // 22 floats
}

// The same with two embedding tables (an SGD one, an Adagrad one): shards then carry a rows section.
inline asyncps::ParamLayout table_layout() {
  asyncps::ParamLayout l = shard_layout();
  l.add_table("user", {.rows = 40, .dim = 3});
  l.add_table("item", {.rows = 9, .dim = 2, .optimizer = asyncps::RowOptimizer::Adagrad});
  return l;
}

// A promise of what a parser returned, broken: a finding (abort, so libFuzzer keeps the input).
inline void contract(bool ok, const char* target, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: the parser returned something that breaks its contract: %s\n", target, what);
    std::abort();
  }
}

// Runs parse(bytes) on the input as it is, and again with its last 8 bytes replaced by the
// checksum of the rest, so that mutations reach the checks behind the checksum.
template <class Parse>
int parse_as_is_and_resealed(const std::uint8_t* data, std::size_t size, Parse parse) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  parse(bytes);
  if (size >= 8) {
    const std::uint64_t sum = asyncps::detail::checksum64(bytes.data(), size - 8);
    std::memcpy(bytes.data() + size - 8, &sum, 8);
    parse(bytes);
  }
  return 0;
}

}  // namespace asyncps_fuzz
