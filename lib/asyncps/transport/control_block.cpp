// defines: ControlBlock (the named operations on the job's shared counters)
#include "transport/control_block.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/check.h"

namespace asyncps::detail {

namespace {
// The slots' places. [kGlobalStep, kHalt, kDone, kBeat0] stay adjacent: one operation reads them.
constexpr int kGlobalStep = 0;
constexpr int kHalt = 1;
constexpr int kDone = 2;
constexpr int kBeat0 = 3;
constexpr int kVersion = 4;
constexpr int kArrivals = 5;
constexpr int kSaveRequest = 6;
constexpr int kSaveAcks = 7;
constexpr int kShadowValid = 8;  // read with the save request: [kSaveRequest .. kSaveGeneration]
constexpr int kSaveSerial = 9;
constexpr int kSaveGeneration = 10;
constexpr int kCommittedStep = 11;
constexpr int kCommittedGeneration = 12;  // + 1 (0: nothing committed yet)
constexpr int kSaveFailures = 13;
constexpr int kRowsMoved = 14;
constexpr int kClocks = 15;  // then W clocks, S checksums, R heartbeats
static_assert(kHalt == kGlobalStep + 1 && kDone == kGlobalStep + 2 && kBeat0 == kGlobalStep + 3);
static_assert(kSaveAcks == kSaveRequest + 1 && kShadowValid == kSaveRequest + 2 && kSaveSerial == kSaveRequest + 3 &&
              kSaveGeneration == kSaveRequest + 4 && kCommittedStep == kSaveRequest + 5 &&
              kCommittedGeneration == kSaveRequest + 6);
}  // namespace

std::size_t ControlBlock::slots(int num_workers, int num_servers) {
  return static_cast<std::size_t>(kClocks + 2 * (num_workers + num_servers));
}

ControlBlock::ControlBlock(RmaChannel& channel, int num_workers, int num_servers)
    : channel_(&channel), workers_(num_workers), servers_(num_servers) {}

int ControlBlock::clock_slot(int worker) const noexcept { return kClocks + worker; }
int ControlBlock::sum_slot(int server) const noexcept { return kClocks + workers_ + server; }
int ControlBlock::beat_slot(int rank) const noexcept { return kClocks + workers_ + servers_ + rank; }

std::int64_t ControlBlock::fetch_add(int slot, std::int64_t add) {
  std::int64_t old = 0;
  channel_->fetch_now(slot, &add, &old, 1, MPI_SUM);
  return old;
}

std::int64_t ControlBlock::read(int slot) {
  std::int64_t v = 0;
  channel_->fetch_now(slot, nullptr, &v, 1, MPI_NO_OP);
  return v;
}

// ---- workers ---------------------------------------------------------------------------------

void ControlBlock::claim(JobProgress& out, RmaBatch& batch) {
  channel_->fetch_add_first(kGlobalStep, claim_add_, out.slots, 4, batch);
}

void ControlBlock::give_back() { fetch_add(kGlobalStep, -1); }
std::int64_t ControlBlock::add_to_step(std::int64_t n) { return fetch_add(kGlobalStep, n); }
std::int64_t ControlBlock::global_step() { return read(kGlobalStep); }

JobProgress ControlBlock::progress() {
  JobProgress p;
  channel_->fetch_now(kGlobalStep, nullptr, p.slots, 4, MPI_NO_OP);
  return p;
}

void ControlBlock::request_halt(bool terminated) { fetch_add(kHalt, terminated ? kTerminatedHalt : 1); }
std::int64_t ControlBlock::version() { return read(kVersion); }
std::int64_t ControlBlock::arrive() { return fetch_add(kArrivals, 1); }

void ControlBlock::close_round() {
  fetch_add(kArrivals, -workers_);  // W -> 0
  fetch_add(kGlobalStep, 1);        // the step first,
  fetch_add(kVersion, 1);           // then release the waiters
}

void ControlBlock::tick_clock(int worker, RmaBatch& batch) {
  channel_->add_slots(clock_slot(worker), &one_, 1, MPI_INT64_T, batch);
}

std::int64_t ControlBlock::min_clock() {
  std::vector<std::int64_t> clocks(static_cast<std::size_t>(workers_));
  channel_->fetch_now(clock_slot(0), nullptr, clocks.data(), workers_, MPI_NO_OP);
  return *std::min_element(clocks.begin(), clocks.end());
}

void ControlBlock::retire(int worker) {
  fetch_add(clock_slot(worker), kRetired);
  fetch_add(kDone, 1);
}

bool ControlBlock::shadow_valid() { return read(kShadowValid) != 0; }
void ControlBlock::mark_shadow_valid() { fetch_add(kShadowValid, 1); }

// ---- heartbeats -------------------------------------------------------------------------------

void ControlBlock::post_beat(int rank, MPI_Request& request) {
  ASYNCPS_MPI_CHECK(MPI_Raccumulate(&one_, 1, MPI_INT64_T, kRank, beat_slot(rank), 1, MPI_INT64_T, MPI_SUM,
                                    channel_->windows().control.get(), &request));
}

void ControlBlock::mark_finished(int rank) {
  const MPI_Win w = channel_->windows().control.get();
  ASYNCPS_MPI_CHECK(MPI_Accumulate(&finished_, 1, MPI_INT64_T, kRank, beat_slot(rank), 1, MPI_INT64_T, MPI_SUM, w));
  ASYNCPS_MPI_CHECK(MPI_Win_flush(kRank, w));
}

// ---- the save protocol ------------------------------------------------------------------------

// Completes this server's operation at server 0: a blocking flush no heartbeat covers (a stopped
// server 0 never completes it over pt2pt), so it is watched.
void ControlBlock::add_and_flush(int slot, std::int64_t add, MPI_Datatype type) {
  static const std::string what = "a save request or acknowledgement to server 0 (MPI_Win_flush)";
  const MPI_Win w = channel_->windows().control.get();
  std::int64_t old = 0;
  ASYNCPS_MPI_CHECK(MPI_Fetch_and_op(&add, &old, type, kRank, slot, MPI_SUM, w));
  const DeadlineScope watch(channel_->config().deadline, channel_->config().control_timeout, what);
  ASYNCPS_MPI_CHECK(MPI_Win_flush(kRank, w));
}

SaveState ControlBlock::read_save_state() {
  static const std::string what = "a save request or acknowledgement to server 0 (MPI_Win_flush)";
  const MPI_Win w = channel_->windows().control.get();
  // request, acks, shadow valid, serial, generation, committed step, committed generation + 1
  std::int64_t v[7] = {0, 0, 0, 0, 0, 0, 0};
  ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, MPI_INT64_T, v, 7, MPI_INT64_T, kRank, kSaveRequest, 7,
                                       MPI_INT64_T, MPI_NO_OP, w));
  const DeadlineScope watch(channel_->config().deadline, channel_->config().control_timeout, what);
  ASYNCPS_MPI_CHECK(MPI_Win_flush(kRank, w));
  return SaveState{v[0], v[1], v[2] != 0, v[3], v[4], v[5], v[6] - 1};
}

void ControlBlock::ack_save(int server, std::uint64_t checksum) {
  add_and_flush(sum_slot(server), static_cast<std::int64_t>(checksum), MPI_UINT64_T);
  add_and_flush(kSaveAcks, 1, MPI_INT64_T);
}

void ControlBlock::ack_failed_save() {
  add_and_flush(kSaveFailures, 1, MPI_INT64_T);
  add_and_flush(kSaveAcks, 1, MPI_INT64_T);
}

void ControlBlock::set_save_request(std::int64_t step, std::int64_t generation) {
  // the step and generation complete before the serial moves (see read_save_state in the header)
  add_and_flush(kSaveRequest, step - load_local(kSaveRequest), MPI_INT64_T);
  add_and_flush(kSaveGeneration, generation - load_local(kSaveGeneration), MPI_INT64_T);
  add_and_flush(kSaveSerial, 1, MPI_INT64_T);
}

void ControlBlock::set_committed(std::int64_t step, std::int64_t generation) {
  add_and_flush(kCommittedStep, step - load_local(kCommittedStep), MPI_INT64_T);
  add_and_flush(kCommittedGeneration, generation + 1 - load_local(kCommittedGeneration), MPI_INT64_T);
}

void ControlBlock::add_rows_moved() {
  static const std::string what = "telling server 0 that embedding rows moved (MPI_Win_flush)";
  const MPI_Win w = channel_->windows().control.get();
  ASYNCPS_MPI_CHECK(MPI_Accumulate(&one_, 1, MPI_INT64_T, kRank, kRowsMoved, 1, MPI_INT64_T, MPI_SUM, w));
  // flushed: over osc pt2pt an operation on this window lands only with a flush, and a worker
  // that moves rows alone never flushes it otherwise
  const DeadlineScope watch(channel_->config().deadline, channel_->config().control_timeout, what);
  ASYNCPS_MPI_CHECK(MPI_Win_flush(kRank, w));
}

void ControlBlock::reset_save(int num_servers, std::int64_t failures) {
  if (failures > 0) add_and_flush(kSaveFailures, -failures, MPI_INT64_T);
  add_and_flush(kSaveAcks, -(num_servers - 1), MPI_INT64_T);
  for (int k = 1; k < num_servers; ++k)  // sum slots back to 0 (uint64 wrap-around)
    add_and_flush(sum_slot(k), static_cast<std::int64_t>(0 - local_shard_sum(k)), MPI_UINT64_T);
}

// ---- server 0's own memory --------------------------------------------------------------------

const Window& ControlBlock::own_window() const {
  const Window& w = channel_->windows().control;
  // Only server 0 holds the block; elsewhere the window is empty and its base points at nothing
  // this rank owns (a wrong read here once crashed only under MPICH).
  if (w.bytes() == 0) throw std::logic_error("ControlBlock: a local read on a rank that does not hold the block");
  return w;
}

std::int64_t ControlBlock::load_local(int slot) const {
  const Window& w = own_window();
  ASYNCPS_MPI_CHECK(MPI_Win_sync(w.get()));
  return __atomic_load_n(&w.data<std::int64_t>()[slot], __ATOMIC_ACQUIRE);
}

void ControlBlock::init_local(std::int64_t step, bool shadow_valid) {
  auto* c = own_window().data<std::int64_t>();
  std::fill_n(c, slots(workers_, servers_), 0);
  c[kGlobalStep] = step;
  c[kShadowValid] = shadow_valid ? 1 : 0;
}

std::int64_t ControlBlock::local_step() const { return load_local(kGlobalStep); }
std::int64_t ControlBlock::local_halt() const { return load_local(kHalt); }
bool ControlBlock::local_shadow_valid() const { return load_local(kShadowValid) != 0; }
std::int64_t ControlBlock::local_save_acks() const { return load_local(kSaveAcks); }
std::int64_t ControlBlock::local_save_failures() const { return load_local(kSaveFailures); }
std::int64_t ControlBlock::local_rows_moved() const { return load_local(kRowsMoved); }
std::uint64_t ControlBlock::local_shard_sum(int server) const {
  return static_cast<std::uint64_t>(load_local(sum_slot(server)));
}
const std::int64_t* ControlBlock::local_beats() const {
  const Window& w = own_window();
  ASYNCPS_MPI_CHECK(MPI_Win_sync(w.get()));
  return w.data<std::int64_t>() + beat_slot(0);
}
void ControlBlock::local_beat0() {
  const Window& w = own_window();
  __atomic_add_fetch(&w.data<std::int64_t>()[kBeat0], 1, __ATOMIC_RELEASE);
  ASYNCPS_MPI_CHECK(MPI_Win_sync(w.get()));
}

}  // namespace asyncps::detail
