// defines: stall_deadline (a Deadline whose stretches are StallWatches)
#include "diagnostics/stall_deadline.h"

#include <array>
#include <cstdlib>
#include <optional>

#include "asyncps/stall_watch.h"

namespace asyncps::detail {

namespace {
class StallDeadline final : public Deadline {
 public:
  // (the transport nests at most a control-block wait around a flush: depth 2)
  void begin(double timeout, const std::string& what) noexcept override {
    if (depth_ == open_.size()) std::abort();  // (a nesting the transport never makes)
    open_[depth_++].emplace(timeout, what, StallWatch::Borrowed{});
  }
  void end() noexcept override { open_[--depth_].reset(); }

 private:
  std::array<std::optional<StallWatch>, 4> open_;
  std::size_t depth_ = 0;
};
}  // namespace

Deadline& stall_deadline() {
  static StallDeadline d;
  return d;
}

}  // namespace asyncps::detail
