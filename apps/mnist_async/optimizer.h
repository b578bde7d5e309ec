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
// 1 - 1/W (Mitliagkas et al., "Asynchrony begets momentum", 2016): each gradient is computed at
// parameters tau global steps old (tau, the staleness, is about W - 1), and applied where the
// other workers' pushes have moved them since. Plain momentum on top diverged: mu 0.9 at lr
// 0.005 in 2 of 6 seeds at W = 8. The corrections (--momentum_correction):
//   predict    (the default) weight prediction: the gradient is computed at the parameters
//              predicted for when the update lands, params - lr * tau * d, d the direction this
//              worker last pushed (the velocity; the other tau pushes each move the arena by about
//              -lr * d). SpecTrain (Chen et al., 2018) and Kosson et al.'s LWP (2021) for
//              pipeline delays. mu is applied as given: at W = 1 it is plain momentum.
//   staleness  mu' = mu^(1 + tau), mu per global step, and the push scaled by sqrt((1 - mu') / (1 - mu))
//   none       mu as given, the gradient at the parameters pulled
// tau is the worker's mean staleness so far (W - 1 before 20 updates are measured). Chosen by
// measurement (MNIST CNN, 3 epochs, lr 0.005, mu 0.9, test accuracy, docs/CONVERGENCE.md): at
// W = 8 predict 0.9630 over 6 seeds (W = 1: 0.9665), none diverged in 2 of 6, staleness 0.943;
// also tried: mu - tau/(1+tau) (Mitliagkas's subtraction) 0.89; that keeping the W = 1 step
// lr/(1 - mu), diverged; mu^sqrt(1+tau) keeping that step, diverged in 3 of 6.
// --weight_prediction turns prediction on for the other optimizers too (Adam gains from it; SGD's
// and Adagrad's last direction is one noisy step, and Adagrad loses: docs/CONVERGENCE.md).
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
  std::string momentum_correction = "predict";    // momentum: predict | staleness | none
  double beta1 = 0.9, beta2 = 0.999;             // adam
  double epsilon = 1e-8;                         // adam, adagrad
  double initial_accumulator = 0.1;              // adagrad: a to start with
  bool weight_prediction = false;                // gradient at the parameters predicted tau steps on
  // whether gradients are computed at the predicted parameters (the flag, or momentum's default)
  bool predicts() const noexcept {
    return weight_prediction || (name == "momentum" && momentum_correction == "predict");
  }
};

class WorkerOptimizer {
 public:
  WorkerOptimizer(std::size_t n, const OptimizerConfig& config);
  // The direction to push for `grad` ([n]); `staleness`: the mean staleness of this worker's
  // updates (momentum's correction uses it).
  std::span<const float> propose(std::span<const float> grad, double staleness);
  void commit();  // the proposed state becomes the state
  // Weight prediction (config().predicts()): out = params - lr * horizon * d, d the direction
  // this worker last pushed; the other workers' tau pushes land on the arena while this one
  // computes, each about -lr * d (SpecTrain, Chen et al. 2018; Kosson et al. 2021's LWP).
  // Returns false (out untouched) before the first commit.
  bool predict(std::span<const float> params, double lr, double horizon, std::span<float> out) const;
  // The momentum the last propose() applied (mu' above; 0 unless momentum), and the scale of its push.
  double momentum_applied() const noexcept { return mu_applied_; }
  double push_scale() const noexcept { return push_scale_; }
  const OptimizerConfig& config() const noexcept { return config_; }
  std::span<const float> velocity() const noexcept { return a_; }  // momentum's v, adam's m, adagrad's a

 private:
  enum class Rule { Sgd, Momentum, Adam, Adagrad };
  std::span<const float> propose_direction(std::span<const float> grad, double staleness);
  OptimizerConfig config_;
  Rule rule_;
  std::vector<float> a_, b_, next_a_, next_b_, dir_;  // first and second state, their candidates
  std::vector<float> pushed_;                         // weight prediction: the last direction pushed
  bool have_pushed_ = false;
  std::int64_t t_ = 0;                                 // adam: updates committed
  double mu_applied_ = 0, push_scale_ = 1;
};

// The momentum correction on its own: mu^(1 + tau) for "staleness", mu otherwise; and the scale
// of the push for the momentum applied, sqrt((1 - applied) / (1 - mu)).
double corrected_momentum(double mu, double staleness, const std::string& correction);
double momentum_push_scale(double mu, double applied);

}  // namespace mnist_async
