// defines: asyncps_fuzz::shard_layout, the layout fuzz_checkpoint_shard parses against
// (make_seeds writes its seed shards with the same one, so that their hash and size match)
#pragma once
#include "asyncps/param_layout.h"

namespace asyncps_fuzz {

inline asyncps::ParamLayout shard_layout() {
  asyncps::ParamLayout l;
  l.add("w", {3, 5});
  l.add("b", {7});
  return l;  // 22 floats
}

}  // namespace asyncps_fuzz
