// defines: ShadowStore (an optional helper: the chief's EMA shadow kept on the servers)
#include "asyncps/shadow_store.h"

#include <vector>

#include "core/vector_ops.h"
#include "worker/worker_access.h"
#include "worker/worker_transport.h"

namespace asyncps {

using detail::Table;

// Its own state: the staged copy of the last store and its requests (stores after the first go
// in the background; drain() settles them).
class ShadowStore::State final : public detail::WorkerLayer {
 public:
  explicit State(detail::WorkerTransport& t) : t(t), batch(detail::RmaBatch::requests_batch()) {}
  void settle() override { t.channel().complete(batch); }

  detail::WorkerTransport& t;
  detail::RmaBatch batch;
  detail::AlignedFloats stage;
  bool stored = false;  // the first store (which sets the servers' flag) is done
};

ShadowStore::ShadowStore(WorkerClient& worker)
    : worker_(worker),
      state_(&detail::transport_of(worker).layer<State>([&] { return std::make_unique<State>(detail::transport_of(worker)); })) {}

void ShadowStore::store(std::span<const float> shadow) {
  State& st = *state_;
  detail::WorkerTransport& t = st.t;
  t.enter("ShadowStore::store");
  t.check_size(shadow.size(), "ShadowStore::store");
  if (!detail::all_finite(shadow.data(), shadow.size()))  // (a checkpoint would keep it, a restart continue it)
    throw ConfigError("ShadowStore::store: shadow holds NaN or Inf (nothing was stored)");
  const auto t0 = detail::WorkerClock::now();
  t.channel().complete_local(st.batch);  // the last store's copy is free again
  st.stage.assign(shadow.begin(), shadow.end());
  t.channel().replace(Table::Shadow, st.stage.data(), st.batch);  // each element whole (MPI_REPLACE)
  if (!st.stored) {  // the first store is complete before the servers call the shadow valid
    t.channel().complete(st.batch);
    t.control().mark_shadow_valid();
    st.stored = true;
  }  // later ones complete in the background
  t.timeline().span("store EMA shadow", t0, detail::WorkerClock::now());
}

bool ShadowStore::load(std::span<float> shadow) {
  detail::WorkerTransport& t = state_->t;
  t.enter("ShadowStore::load");
  t.check_size(shadow.size(), "ShadowStore::load");
  if (!t.control().shadow_valid()) return false;
  detail::RmaBatch b = detail::RmaBatch::flushed();
  t.channel().read(Table::Shadow, shadow.data(), b);
  t.channel().complete(b);
  return true;
}

}  // namespace asyncps
