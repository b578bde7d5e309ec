// defines: request_completion (request-based operations, completed by their requests)
#include "core/check.h"
#include "transport/completion.h"

namespace asyncps::detail {
namespace {

class RequestCompletion final : public Completion {
 public:
  std::string_view name() const noexcept override { return "request"; }
  bool completes_by_flush() const noexcept override { return false; }

  void read(void* dst, int n, MPI_Datatype type, int target, MPI_Aint disp, bool atomic, MPI_Win w,
            RmaBatch& batch) const override {
    MPI_Request r;
    if (atomic)
      ASYNCPS_MPI_CHECK(
          MPI_Rget_accumulate(nullptr, 0, type, dst, n, type, target, disp, n, type, MPI_NO_OP, w, &r));
    else
      ASYNCPS_MPI_CHECK(MPI_Rget(dst, n, type, target, disp, n, type, w, &r));
    batch.requests.push_back(r);
  }

  void accumulate(const void* src, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op, MPI_Win w,
                  RmaBatch& batch) const override {
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Raccumulate(src, n, type, target, disp, n, type, op, w, &r));
    batch.requests.push_back(r);
  }

  void fetch(const void* add, void* result, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op, MPI_Win w,
             RmaBatch& batch) const override {
    MPI_Request r;
    ASYNCPS_MPI_CHECK(MPI_Rget_accumulate(add, op == MPI_NO_OP ? 0 : n, type, result, n, type, target, disp, n, type,
                                          op, w, &r));
    batch.requests.push_back(r);
  }

  // one operation: the adds are {add[0], 0, ...}, so MPI_SUM moves only the first slot
  void fetch_add_first(const std::int64_t* add, std::int64_t* result, int n, int target, MPI_Aint disp, MPI_Win w,
                       RmaBatch& batch) const override {
    fetch(add, result, n, MPI_INT64_T, target, disp, MPI_SUM, w, batch);
  }
};

}  // namespace

const Completion& request_completion() {
  static const RequestCompletion c;
  return c;
}

}  // namespace asyncps::detail
