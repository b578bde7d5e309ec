// defines: WorkerOptimizer, corrected_momentum
#include "optimizer.h"

#include <algorithm>
#include <cmath>

#include "asyncps/error.h"
#include "nn/updates.h"

namespace mnist_async {

double corrected_momentum(double mu, double staleness, const std::string& correction) {
  if (correction != "staleness") return mu;
  // mu' = mu^(1 + tau): mu per global step, over the 1 + tau global steps between this worker's own
  return std::pow(mu, 1.0 + std::max(0.0, staleness));
}

double momentum_push_scale(double mu, double applied) {
  // sqrt((1 - mu') / (1 - mu)): between keeping lr (1) and keeping the long-run step lr / (1 - mu)
  return mu >= 1 ? 1.0 : std::sqrt((1.0 - applied) / (1.0 - mu));
}

WorkerOptimizer::WorkerOptimizer(std::size_t n, const OptimizerConfig& config) : config_(config) {
  if (config.name == "sgd") rule_ = Rule::Sgd;
  else if (config.name == "momentum") rule_ = Rule::Momentum;
  else if (config.name == "adam") rule_ = Rule::Adam;
  else if (config.name == "adagrad") rule_ = Rule::Adagrad;
  else throw asyncps::ConfigError("--optimizer must be sgd, momentum, adam or adagrad, got '" + config.name + "'");
  if (config.predicts()) pushed_.assign(n, 0.f);  // (swapped with dir_ at every commit)
  if (rule_ == Rule::Sgd) {
    if (config.predicts()) dir_.assign(n, 0.f);
    return;
  }
  a_.assign(n, rule_ == Rule::Adagrad ? static_cast<float>(config.initial_accumulator) : 0.f);
  next_a_.assign(n, 0.f);
  if (rule_ == Rule::Adam) {
    b_.assign(n, 0.f);
    next_b_.assign(n, 0.f);
  }
  dir_.assign(n, 0.f);
}

std::span<const float> WorkerOptimizer::propose(std::span<const float> grad, double staleness) {
  if (rule_ == Rule::Sgd && config_.predicts()) {  // (sgd pushes the gradient itself: kept for the prediction)
    if (grad.size() != dir_.size())
      throw asyncps::Error("WorkerOptimizer: gradient has " + std::to_string(grad.size()) + " floats, the state " +
                           std::to_string(dir_.size()));
    std::copy(grad.begin(), grad.end(), dir_.begin());
    return dir_;
  }
  return propose_direction(grad, staleness);
}

bool WorkerOptimizer::predict(std::span<const float> params, double lr, double horizon, std::span<float> out) const {
  if (!have_pushed_ || pushed_.size() != params.size() || out.size() != params.size()) return false;
  const auto step = static_cast<float>(lr * horizon);
  asyncps::nn::step_along(out.data(), params.data(), pushed_.data(), params.size(), step);  // out = p - step d  [n]
  return true;
}

std::span<const float> WorkerOptimizer::propose_direction(std::span<const float> grad, double staleness) {
  if (rule_ == Rule::Sgd) return grad;
  if (grad.size() != a_.size())
    throw asyncps::Error("WorkerOptimizer: gradient has " + std::to_string(grad.size()) + " floats, the state " +
                         std::to_string(a_.size()));
  const std::size_t n = a_.size();
  const float* g = grad.data();
  switch (rule_) {
    case Rule::Momentum: {
      mu_applied_ = corrected_momentum(config_.momentum, staleness, config_.momentum_correction);
      const auto mu = static_cast<float>(mu_applied_);
      const auto keep = static_cast<float>(momentum_push_scale(config_.momentum, mu_applied_));  // d = keep * v'
      push_scale_ = keep;
      asyncps::nn::momentum_step(next_a_.data(), dir_.data(), a_.data(), g, n, mu, keep);  // v' = mu' v + g; d = keep v'  [n]
      return dir_;
    }
    case Rule::Adam: {
      const auto b1 = static_cast<float>(config_.beta1), b2 = static_cast<float>(config_.beta2);
      const double t = static_cast<double>(t_ + 1);
      // bias corrections 1 - b^t, folded into one factor on m and one on s
      const auto c1 = static_cast<float>(1.0 / (1.0 - std::pow(config_.beta1, t)));
      const auto c2 = static_cast<float>(1.0 / (1.0 - std::pow(config_.beta2, t)));
      const auto eps = static_cast<float>(config_.epsilon);
      // m' = b1 m + (1 - b1) g; s' = b2 s + (1 - b2) g^2; d = c1 m' / (sqrt(c2 s') + eps)   [n]
      asyncps::nn::adam_step(next_a_.data(), next_b_.data(), dir_.data(), a_.data(), b_.data(), g, n,
                             asyncps::nn::AdamFactors{b1, b2, c1, c2, eps});
      return dir_;
    }
    case Rule::Adagrad: {
      const auto eps = static_cast<float>(config_.epsilon);
      asyncps::nn::adagrad_step(next_a_.data(), dir_.data(), a_.data(), g, n, eps);  // a' = a + g^2  [n]
      return dir_;
    }
    case Rule::Sgd:
      break;
  }
  return grad;
}

void WorkerOptimizer::commit() {
  if (config_.predicts()) {  // the direction that landed is the prediction's; dir_ is rewritten whole by propose
    pushed_.swap(dir_);
    have_pushed_ = true;
  }
  if (rule_ == Rule::Sgd) return;
  a_.swap(next_a_);
  if (rule_ == Rule::Adam) {
    b_.swap(next_b_);
    ++t_;
  }
}

}  // namespace mnist_async
