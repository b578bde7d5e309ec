// libFuzzer target: asyncps::detail::parse_index, the checkpoint index parser.
// Contract (lib/asyncps/checkpoint/checkpoint_format.h): on any bytes it returns or throws CheckpointError;
// what it returns has one entry per server, plain shard names, and shards that tile the arena.
// Anything else (another exception, a crash, a sanitizer report, a broken promise) is a finding.
// Each input is parsed twice: as it is, and with its last 8 bytes replaced by the checksum of the
// rest, so that mutations reach the checks behind the checksum.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps_internal/checkpoint/checkpoint_format.h"
#include "fuzz_common.h"

namespace {

void check(bool ok, const char* what) { asyncps_fuzz::contract(ok, "fuzz_checkpoint_index", what); }

void parse(const std::string& bytes) {
  using namespace asyncps::detail;
  Index x;
  try {
    x = parse_index(bytes, "fuzz.index");
  } catch (const asyncps::CheckpointError&) {
    return;
  }
  check(x.num_servers >= 1 && x.shards.size() == x.num_servers, "one entry per server");
  std::uint64_t end = 0;
  for (const auto& e : x.shards) {
    check(asyncps::limits::file_name_problem(e.file, kMaxShardFileNameBytes).empty(), "plain shard names");
    check(e.offset == end && e.count <= x.arena - end, "shards in order, without gaps or overlaps");
    end += e.count;
  }
  check(end == x.arena, "shards cover the arena");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return asyncps_fuzz::parse_as_is_and_resealed(data, size, parse);
}
