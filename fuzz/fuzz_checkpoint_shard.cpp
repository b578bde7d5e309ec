// libFuzzer target: asyncps::detail::parse_shard, the checkpoint shard parser, against a fixed
// two-tensor layout (fuzz_common.h).
// Contract (lib/asyncps/checkpoint/checkpoint_format.h): on any bytes it returns or throws CheckpointError,
// and allocates no more than the bytes it is given (scripts/run-fuzzers.sh caps malloc); what it
// returns is of this layout and holds `count` floats (and as many shadow floats, or none).
// Anything else is a finding. Each input is parsed as it is and with its checksum made right.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "asyncps/error.h"
#include "asyncps_internal/checkpoint/checkpoint_format.h"
#include "fuzz_common.h"

namespace {

const asyncps::ParamLayout& layout() {
  static const asyncps::ParamLayout l = asyncps_fuzz::shard_layout();
  return l;
}

void check(bool ok, const char* what) { asyncps_fuzz::contract(ok, "fuzz_checkpoint_shard", what); }

void parse(const std::string& bytes) {
  using namespace asyncps::detail;
  ShardFile s;
  try {
    s = parse_shard(bytes, "fuzz.shard", layout());
  } catch (const asyncps::CheckpointError&) {
    return;
  }
  const auto& h = s.header;
  check(h.layout_hash == layout().hash() && h.arena == layout().size(), "of this layout");
  check(h.offset <= h.arena && h.count <= h.arena - h.offset, "a range inside the arena");
  check(h.num_servers >= 1 && h.server < h.num_servers, "a server of the job");
  check(s.params.size() == h.count, "count floats");
  check(s.shadow.empty() || s.shadow.size() == h.count, "count shadow floats, or none");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return asyncps_fuzz::parse_as_is_and_resealed(data, size, parse);
}
