// libFuzzer target: asyncps::detail::parse_index, the checkpoint index parser.
// Contract (lib/asyncps/checkpoint_format.h): on any bytes it returns or throws CheckpointError;
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
#include "asyncps_internal/checkpoint_format.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_checkpoint_index: parse_index returned an index that breaks its contract: %s\n", what);
    std::abort();
  }
}

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
    check(!e.file.empty() && e.file != "." && e.file != ".." && e.file.find('/') == std::string::npos &&
              e.file.find('\0') == std::string::npos,
          "plain shard names");
    check(e.offset == end && e.count <= x.arena - end, "shards in order, without gaps or overlaps");
    end += e.count;
  }
  check(end == x.arena, "shards cover the arena");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  parse(bytes);
  if (size >= 8) {
    const std::uint64_t sum = asyncps::detail::checksum64(bytes.data(), size - 8);
    std::memcpy(bytes.data() + size - 8, &sum, 8);
    parse(bytes);
  }
  return 0;
}
