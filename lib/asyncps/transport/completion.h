// defines: asyncps::detail::Completion, RmaBatch, flush_completion, request_completion
// How a one-sided operation completes: a strategy issues each kind of operation the channel
// needs in its own form and says what completes a batch of them. RmaChannel and ControlBlock
// hand every operation to the batch's strategy and never ask which one it is.
//   flush_completion()    plain operations (MPI_Get_accumulate, MPI_Accumulate, a hardware
//                         MPI_Fetch_and_op for one slot), completed by one MPI_Win_flush per
//                         window touched: one node, osc rdma, where that is the faster form.
//   request_completion()  request-based operations (MPI_Rget_accumulate, MPI_Raccumulate); a
//                         batch completes by its requests (a read or a fetch: its data is back; a
//                         write: local completion, made remote by a later flush). For transports
//                         that need the target (pt2pt between hosts): one wait, which sleeps, no
//                         flush round trip.
// Which one a session's step path takes is chosen once, with its progress (runtime/
// progress_policy.cpp); blocking calls and tickets pick theirs by name (RmaBatch::flushed(),
// RmaBatch::requests_batch()).
//
// Adding a strategy: a file with a class that derives from Completion and a function that
// returns its one instance (completion_flush.cpp, completion_request.cpp are the two), and the
// row of the progress policy that picks it.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace asyncps::detail {

struct RmaBatch;

class Completion {
 public:
  virtual ~Completion() = default;
  virtual std::string_view name() const noexcept = 0;  // for the logs: "flush", "request"
  // Whether its operations complete, even locally, only when their window is flushed (the
  // channel then counts every table a batch touches as one to flush; else only its writes).
  virtual bool completes_by_flush() const noexcept = 0;
  // dst[0..n) = target's [disp, disp + n): element-wise atomic (MPI_NO_OP), or where `atomic`
  // is false a plain get.
  virtual void read(void* dst, int n, MPI_Datatype type, int target, MPI_Aint disp, bool atomic, MPI_Win w,
                    RmaBatch& batch) const = 0;
  // target's [disp, disp + n) (op)= src[0..n); src untouched until the batch completes locally.
  virtual void accumulate(const void* src, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op, MPI_Win w,
                          RmaBatch& batch) const = 0;
  // result[0..n) = target's [disp, disp + n) before; then (op)= add[0..n) (MPI_NO_OP: add unused).
  virtual void fetch(const void* add, void* result, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op,
                     MPI_Win w, RmaBatch& batch) const = 0;
  // result[0..n) = the int64 slots at disp before; then the first += add[0] (add[1..n) are 0):
  // the step claim, whose other slots are only read.
  virtual void fetch_add_first(const std::int64_t* add, std::int64_t* result, int n, int target, MPI_Aint disp,
                               MPI_Win w, RmaBatch& batch) const = 0;
};

const Completion& flush_completion();    // completion_flush.cpp
const Completion& request_completion();  // completion_request.cpp

// Operations in flight together, completed together (RmaChannel::complete).
struct RmaBatch {
  const Completion* how = &request_completion();
  std::vector<MPI_Request> requests;
  unsigned touched = 0;  // tables a flush must complete it on (writes; every operation when flushed)
  static RmaBatch requests_batch() { return RmaBatch{&request_completion(), {}, 0}; }
  static RmaBatch flushed() { return RmaBatch{&flush_completion(), {}, 0}; }
  bool empty() const noexcept { return requests.empty() && touched == 0; }
};

}  // namespace asyncps::detail
