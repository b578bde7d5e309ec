// defines: asyncps::detail::stall_deadline
// The transport's Deadline (transport/channel_config.h) as StallWatches: each stretch a watch,
// nested as the watches nest, ending the job with its `what` when it overruns.
#pragma once
#include "transport/channel_config.h"

namespace asyncps::detail {

// The one Deadline of the process (StallWatches belong to the FUNNELED thread; so do its stretches).
Deadline& stall_deadline();

}  // namespace asyncps::detail
