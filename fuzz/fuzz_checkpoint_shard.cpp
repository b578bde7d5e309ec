// libFuzzer target: asyncps::detail::parse_shard, the checkpoint shard parser, against two fixed
// layouts (fuzz_common.h): two tensors, and the same with two embedding tables.
// Contract (lib/asyncps/checkpoint/checkpoint_format.h): on any bytes it returns or throws CheckpointError,
// and allocates no more than the bytes it is given (scripts/run-fuzzers.sh caps malloc); what it
// returns is of this layout and holds `count` floats (and as many shadow floats, or none) and, with
// tables, exactly the writing server's rows of each.
// Anything else is a finding. Each input is parsed as it is and with its checksum made right.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "asyncps/error.h"
#include "asyncps/roles.h"
#include "asyncps_internal/checkpoint/checkpoint_format.h"
#include "fuzz_common.h"

namespace {

const asyncps::ParamLayout& dense_layout() {
  static const asyncps::ParamLayout l = asyncps_fuzz::shard_layout();
  return l;
}
const asyncps::ParamLayout& tables_layout() {
  static const asyncps::ParamLayout l = asyncps_fuzz::table_layout();
  return l;
}

void check(bool ok, const char* what) { asyncps_fuzz::contract(ok, "fuzz_checkpoint_shard", what); }

void parse_as(const std::string& bytes, const asyncps::ParamLayout& layout) {
  using namespace asyncps::detail;
  ShardFile s;
  try {
    s = parse_shard(bytes, "fuzz.shard", layout);
  } catch (const asyncps::CheckpointError&) {
    return;
  }
  const auto& h = s.header;
  check(h.layout_hash == layout.hash() && h.arena == layout.size(), "of this layout");
  check(h.offset <= h.arena && h.count <= h.arena - h.offset, "a range inside the arena");
  check(h.num_servers >= 1 && h.server < h.num_servers, "a server of the job");
  check(s.params.size() == h.count, "count floats");
  check(s.shadow.empty() || s.shadow.size() == h.count, "count shadow floats, or none");
  const std::size_t rows = layout.tables().empty()
                               ? 0
                               : asyncps::RowPlan(layout, static_cast<int>(h.num_servers)).server_floats(static_cast<int>(h.server));
  check(s.rows.size() == rows, "the server's rows of every table, or none without tables");
}

void parse(const std::string& bytes) {
  parse_as(bytes, dense_layout());
  parse_as(bytes, tables_layout());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return asyncps_fuzz::parse_as_is_and_resealed(data, size, parse);
}
