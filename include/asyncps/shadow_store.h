// defines: asyncps::ShadowStore
// An optional helper above the transport: a copy of the chief's EMA shadow (or any second
// arena-sized vector) kept on the servers, so that checkpoints hold it and a restarted job
// continues its average.
//
//   asyncps::ShadowStore shadow(w);       // w: the chief's WorkerClient
//   if (!shadow.load(ema)) ema = params;  // false: the servers hold none (a fresh job)
//   ... shadow.store(ema) now and then ...
#pragma once
#include <memory>
#include <span>

#include "asyncps/worker_client.h"

namespace asyncps {

class ShadowStore {
 public:
  explicit ShadowStore(WorkerClient& worker);  // it must outlive this
  ~ShadowStore();  // completes a store still in flight (unless the worker has drained)
  ShadowStore(const ShadowStore&) = delete;
  ShadowStore& operator=(const ShadowStore&) = delete;
  // Copies `shadow` (layout().size() floats) to the servers (the first store completes before
  // the servers call the shadow valid; later ones in the background, each element whole).
  void store(std::span<const float> shadow);
  // Fills `shadow` from the servers; false if they hold none.
  bool load(std::span<float> shadow);

 private:
  class State;  // its staging copy and requests in flight
  WorkerClient& worker_;
  std::unique_ptr<State> state_;
};

}  // namespace asyncps
