// defines: mnist_async::OptimizerConfig, mnist_async::WorkerOptimizer
// The update rule of --optimizer, kept on the worker (the servers stay passive: the worker pushes
// a direction d and the arena moves by -lr * d):
//   sgd       d = g
//   momentum  v <- mu' v + g, d = v; mu' = mu - (the momentum asynchrony already adds), below
//   adam      m <- b1 m + (1 - b1) g, s <- b2 s + (1 - b2) g^2, d = m^ / (sqrt(s^) + eps) (bias-corrected)
//   adagrad   a <- a + g^2, d = g / (sqrt(a) + eps)
// A rejected push (a non-finite gradient) leaves the state as it was: propose() computes the
// candidate, commit() keeps it once the push landed.
//
// Momentum under asynchrony. W async workers behave like SGD with an implicit momentum of about
// 1 - 1/W (Mitliagkas et al., "Asynchrony begets momentum", 2016), and each worker's velocity is
// updated only once every 1 + tau global steps (tau its staleness, about W - 1). Explicit
// momentum on top overshoots: mu 0.9 at lr 0.005 diverged at W = 8 in 1 of 3 seeds
// (docs/CONVERGENCE.md). With momentum_correction "staleness" (the default) a worker applies
//   mu' = mu^(1 + tau)                         mu per global step, as the EMA decays per global step
//   d   = sqrt((1 - mu') / (1 - mu)) * v'      the push, between the plain lr (1) and the long-run
//                                              step of W = 1, lr / (1 - mu) (fully: diverged)
// with tau the mean staleness of its updates so far (W - 1 before 20 are measured): at W = 1 both
// are mu and 1. Chosen by measurement (MNIST CNN, 3 epochs, W = 4 and 8, 3-6 seeds, lr 0.005,
// mu 0.9; test accuracy): none 0.964 / 0.96 with 1 of 3 seeds diverged at W = 8; mu - tau/(1+tau)
// (Mitliagkas's subtraction) 0.90 / 0.89; that with the lr kept, diverged at W = 8;
// mu^sqrt(1+tau) with the long-run step kept, 0.967 / diverged in 3 of 6 seeds; mu^(1+tau) with
// the sqrt scale, 0.950 / 0.943 (6 of 6 seeds, none diverged): the rule. "none" applies mu as given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mnist_async {

struct OptimizerConfig {
  std::string name = "sgd";                      // sgd | momentum | adam | adagrad
  double momentum = 0.9;                         // momentum: mu in [0, 1)
  std::string momentum_correction = "staleness";  // momentum: staleness | none
  double beta1 = 0.9, beta2 = 0.999;             // adam
  double epsilon = 1e-8;                         // adam, adagrad
  double initial_accumulator = 0.1;              // adagrad: a to start with
};

class WorkerOptimizer {
 public:
  WorkerOptimizer(std::size_t n, const OptimizerConfig& config);
  // The direction to push for `grad` ([n]); `staleness`: the mean staleness of this worker's
  // updates (momentum's correction uses it).
  std::span<const float> propose(std::span<const float> grad, double staleness);
  void commit();  // the proposed state becomes the state
  // The momentum the last propose() applied (mu' above; 0 unless momentum), and the scale of its push.
  double momentum_applied() const noexcept { return mu_applied_; }
  double push_scale() const noexcept { return push_scale_; }
  const OptimizerConfig& config() const noexcept { return config_; }
  std::span<const float> velocity() const noexcept { return a_; }  // momentum's v, adam's m, adagrad's a

 private:
  enum class Rule { Sgd, Momentum, Adam, Adagrad };
  OptimizerConfig config_;
  Rule rule_;
  std::vector<float> a_, b_, next_a_, next_b_, dir_;  // first and second state, their candidates
  std::int64_t t_ = 0;                                 // adam: updates committed
  double mu_applied_ = 0, push_scale_ = 1;
};

// The momentum correction on its own: mu^(1 + tau) for "staleness", mu for "none"; and the scale
// of the push for the momentum applied, sqrt((1 - applied) / (1 - mu)).
double corrected_momentum(double mu, double staleness, const std::string& correction);
double momentum_push_scale(double mu, double applied);

}  // namespace mnist_async
