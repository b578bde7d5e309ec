// defines: flush_completion (plain operations, completed by MPI_Win_flush)
#include "core/check.h"
#include "transport/completion.h"

namespace asyncps::detail {
namespace {

class FlushCompletion final : public Completion {
 public:
  std::string_view name() const noexcept override { return "flush"; }
  bool completes_by_flush() const noexcept override { return true; }

  void read(void* dst, int n, MPI_Datatype type, int target, MPI_Aint disp, bool atomic, MPI_Win w,
            RmaBatch&) const override {
    if (atomic)
      ASYNCPS_MPI_CHECK(MPI_Get_accumulate(nullptr, 0, type, dst, n, type, target, disp, n, type, MPI_NO_OP, w));
    else
      ASYNCPS_MPI_CHECK(MPI_Get(dst, n, type, target, disp, n, type, w));
  }

  void accumulate(const void* src, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op, MPI_Win w,
                  RmaBatch&) const override {
    ASYNCPS_MPI_CHECK(MPI_Accumulate(src, n, type, target, disp, n, type, op, w));
  }

  void fetch(const void* add, void* result, int n, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op, MPI_Win w,
             RmaBatch&) const override {
    if (n == 1 && op == MPI_SUM)  // a hardware fetch-and-op where the component has one
      ASYNCPS_MPI_CHECK(MPI_Fetch_and_op(add, result, type, target, disp, MPI_SUM, w));
    else
      ASYNCPS_MPI_CHECK(MPI_Get_accumulate(add, op == MPI_NO_OP ? 0 : n, type, result, n, type, target, disp, n, type,
                                           op, w));
  }

  // the first slot by MPI_Fetch_and_op, the rest by one read: two operations, both plain
  void fetch_add_first(const std::int64_t* add, std::int64_t* result, int n, int target, MPI_Aint disp, MPI_Win w,
                       RmaBatch& batch) const override {
    fetch(add, result, 1, MPI_INT64_T, target, disp, MPI_SUM, w, batch);
    if (n > 1) fetch(nullptr, result + 1, n - 1, MPI_INT64_T, target, disp + 1, MPI_NO_OP, w, batch);
  }
};

}  // namespace

const Completion& flush_completion() {
  static const FlushCompletion c;
  return c;
}

}  // namespace asyncps::detail
