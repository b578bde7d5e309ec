// defines: asyncps::detail::transport_of
// How the library's layers above the worker's transport (StepLoop, ShadowStore, the embedding
// tables) reach it from a WorkerClient, without the public header naming it: every WorkerClient
// registers its transport for its life. Defined in worker_client.cpp.
#pragma once
#include "asyncps/worker_client.h"

namespace asyncps::detail {

class WorkerTransport;

// The transport of a live WorkerClient.
WorkerTransport& transport_of(const WorkerClient& worker);

}  // namespace asyncps::detail
