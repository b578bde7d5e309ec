// defines: WorkerClient (the public face of the worker's transport)
#include "asyncps/worker_client.h"

#include <mutex>
#include <unordered_map>

#include "asyncps/error.h"
#include "asyncps/mpi_environment.h"
#include "asyncps/option_choices.h"
#include "runtime/owner_thread.h"
#include "worker/worker_access.h"
#include "worker/worker_transport.h"

namespace asyncps {

namespace {
// every live WorkerClient's transport (WorkerClient is neither copied nor moved: its address holds)
struct Registry {
  std::mutex mu;
  std::unordered_map<const WorkerClient*, detail::WorkerTransport*> of;
};
Registry& registry() {
  static Registry r;
  return r;
}
// claim_step and next_step count the steps of a loop written on the transport, which no step
// policy touches: options that ask for one (a mode other than async, overlap, staleness-scaled
// rates, DC-ASGD) would have no effect there. StepLoop runs them.
void refuse_step_policy(const Options& o, const char* call) {
  std::string what;
  if (o.mode != Mode::Async) what = std::string("Options::mode ") + name_of(o.mode);
  else if (o.overlap) what = "Options::overlap";
  else if (o.staleness_lr) what = "Options::staleness_lr";
  else if (o.dc_lambda != 0) what = "Options::dc_lambda";
  if (!what.empty())
    throw ConfigError(std::string(call) + ": " + what +
                      " has no effect on a loop of claim_step or next_step (it is a step policy: write the loop "
                      "with StepLoop's begin_step and end_step)");
}
}  // namespace

detail::WorkerTransport& detail::transport_of(const WorkerClient& worker) {
  Registry& r = registry();
  const std::lock_guard lock(r.mu);
  return *r.of.at(&worker);  // (a WorkerClient registers in its constructor, before any layer can ask)
}

WorkerClient::WorkerClient(Session& session) {
  detail::check_thread(session, "WorkerClient");
  impl_ = std::make_unique<detail::WorkerTransport>(session);  // collective with the servers
  Registry& r = registry();
  const std::lock_guard lock(r.mu);
  r.of[this] = impl_.get();
}

WorkerClient::~WorkerClient() {
  struct Unregister {
    const WorkerClient* w;
    ~Unregister() {
      Registry& r = registry();
      const std::lock_guard lock(r.mu);
      r.of.erase(w);
    }
  } unregister{this};
  // the job is about to abort: no finish() (collective); the windows abandon themselves
  if (detail::unwinding()) return;
  try {
    finish();
  } catch (const std::exception& e) {
    // destructors never throw, and the other ranks wait for this one in collectives: abort all
    abort_job((std::string("WorkerClient::finish failed: ") + e.what()).c_str());
  }
}

void WorkerClient::pull(std::span<float> params) { impl_->pull(params); }
void WorkerClient::push(std::span<const float> grad, float scale) { impl_->push(grad, scale); }
Ticket WorkerClient::push_async(std::span<const float> grad, float scale) { return impl_->push_async(grad, scale); }
Ticket WorkerClient::pull_async(std::span<float> params) { return impl_->pull_async(params); }
void WorkerClient::wait(Ticket ticket) { impl_->wait(ticket); }
void WorkerClient::wait_all() { impl_->wait_all(); }
void WorkerClient::progress() { impl_->progress(); }

std::int64_t WorkerClient::next_step() {
  impl_->enter("WorkerClient::next_step");
  refuse_step_policy(impl_->options(), "WorkerClient::next_step");
  impl_->check_updating("WorkerClient::next_step");
  ++impl_->stats().steps;
  return impl_->control().add_to_step(1) + 1;
}

std::optional<std::int64_t> WorkerClient::claim_step(std::int64_t limit) {
  impl_->enter("WorkerClient::claim_step");
  refuse_step_policy(impl_->options(), "WorkerClient::claim_step");
  detail::WorkerTransport::check_limit(limit, "WorkerClient::claim_step");
  impl_->check_updating("WorkerClient::claim_step");
  const std::int64_t mine = impl_->control().add_to_step(1) + 1;
  if (mine <= limit) {
    ++impl_->stats().steps;
    return mine;
  }
  impl_->control().give_back();  // over the limit
  return std::nullopt;
}

bool WorkerClient::restored() const noexcept { return impl_->restored().found; }
std::int64_t WorkerClient::restored_step() const noexcept { return impl_->restored().found ? impl_->restored().step : 0; }

std::int64_t WorkerClient::global_step() {
  impl_->enter("WorkerClient::global_step");
  return impl_->control().global_step();
}

void WorkerClient::drain() { impl_->drain(); }

void WorkerClient::finish() {
  if (!impl_ || impl_->finished()) return;
  impl_->finish();
}

bool WorkerClient::finished() const noexcept { return impl_->finished(); }
const WorkerStats& WorkerClient::stats() const noexcept { return impl_->stats(); }
int WorkerClient::worker_index() const noexcept { return impl_->worker_index(); }
void WorkerClient::note_span(const char* name, std::chrono::steady_clock::time_point begin,
                             std::chrono::steady_clock::time_point end) {
  detail::check_thread(impl_->session(), "WorkerClient::note_span");
  if (name == nullptr) throw ConfigError("WorkerClient::note_span: the span's name is null");
  if (end < begin) throw ConfigError("WorkerClient::note_span: the span ends before it begins");
  impl_->timeline().span(name, begin, end);
}

}  // namespace asyncps
