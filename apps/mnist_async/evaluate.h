// defines: mnist_async::Accuracy, evaluate, run_eval — accuracy of a parameter arena on the
// validation and test sets, and --eval_only (a checkpoint evaluated, plain and EMA)
#pragma once
#include <span>

#include "mnist/dataset.h"
#include "nn/mnist_cnn.h"
#include "options.h"

namespace mnist_async {

struct Accuracy {
  double validation = 0, test = 0;
};
Accuracy evaluate(asyncps::nn::Backend& backend, const asyncps::mnist::Mnist& data, std::span<const float> params);

// --eval_only: evaluates a checkpoint (plain and EMA) on validation and test; returns the exit code.
int run_eval(const Config& config);

}  // namespace mnist_async
