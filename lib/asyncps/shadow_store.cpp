// defines: ShadowStore (an optional helper: the chief's EMA shadow kept on the servers)
#include "asyncps/shadow_store.h"

#include <chrono>
#include <cstdint>

#include "worker_impl.h"

namespace asyncps {

ShadowStore::ShadowStore(WorkerClient& worker) : worker_(worker) {}

void ShadowStore::store(std::span<const float> shadow) {
  WorkerClient::Impl& m = *worker_.impl_;
  m.enter("ShadowStore::store");
  m.check_size(shadow.size(), "ShadowStore::store");
  const auto t0 = Clock::now();
  m.waitall(m.shadow_requests);  // the last store's copy is free again
  m.shadow_stage.assign(shadow.begin(), shadow.end());
  m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Raccumulate(m.shadow_stage.data() + off, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_REPLACE,
                                      m.win.shadow.get(), &r));
    m.shadow_requests.push_back(r);
  });
  if (!m.shadow_stored) {  // the first store is complete before the servers call the shadow valid
    m.waitall(m.shadow_requests);
    m.flush(m.win.shadow);
    m.fetch_and_add(detail::ctrl::kShadowValid, 1, MPI_SUM);
    m.shadow_stored = true;
  }  // later ones complete in the background (each element whole: MPI_REPLACE is atomic)
  m.timeline.span("store EMA shadow", t0, Clock::now());
}

bool ShadowStore::load(std::span<float> shadow) {
  WorkerClient::Impl& m = *worker_.impl_;
  m.enter("ShadowStore::load");
  m.check_size(shadow.size(), "ShadowStore::load");
  if (m.fetch_and_add(detail::ctrl::kShadowValid, 0, MPI_NO_OP) == 0) return false;
  m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, shadow.data() + off, n, MPI_FLOAT, target, disp, n,
                                         MPI_FLOAT, MPI_NO_OP, m.win.shadow.get()));
  });
  m.flush(m.win.shadow);
  return true;
}

}  // namespace asyncps
