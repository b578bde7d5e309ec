// defines: mnist_async::Momentum
// Heavy-ball momentum kept on the worker (the servers stay passive): the worker pushes its
// velocity v <- mu * v + g instead of g (so the arena moves by -lr * v). A rejected push (a
// non-finite gradient) leaves the velocity as it was: propose() computes the candidate,
// commit() keeps it once the push landed.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace mnist_async {

class Momentum {
 public:
  Momentum(std::size_t n, double mu);
  // The velocity this gradient would make: mu * v + g   ([n] = scalar * [n] + [n])
  std::span<const float> propose(std::span<const float> grad);
  void commit();  // the proposed velocity becomes the velocity
  std::span<const float> velocity() const noexcept { return v_; }

 private:
  std::vector<float> v_, next_;
  float mu_;
};

}  // namespace mnist_async
