// defines: asyncps::ShadowStore
// An optional helper above the transport: a copy of the chief's EMA shadow (or any second
// arena-sized vector) kept on the servers, so that checkpoints hold it and a restarted job
// continues its average.
//
//   asyncps::ShadowStore shadow(w);       // w: the chief's WorkerClient
//   if (!shadow.load(ema)) ema = params;  // false: the servers hold none (a fresh job)
//   ... shadow.store(ema) now and then ...
#pragma once
#include <span>

#include "asyncps/worker_client.h"

namespace asyncps {

class ShadowStore {
 public:
  // The worker must outlive it; its drain() completes a store still in flight.
  explicit ShadowStore(WorkerClient& worker);
  // Copies `shadow` (layout().size() floats) to the servers (the first store completes before
  // the servers call the shadow valid; later ones in the background, each element whole).
  // NaN or Inf in it: ConfigError, and nothing is stored.
  void store(std::span<const float> shadow);
  // Fills `shadow` from the servers; false if they hold none.
  bool load(std::span<float> shadow);

 private:
  class State;  // its staging copy and requests in flight, held by the worker's transport
  WorkerClient& worker_;
  State* state_;
};

}  // namespace asyncps
