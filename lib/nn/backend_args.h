// defines: asyncps::nn::check_forward_args, check_step_args
// The argument checks every Backend makes, in one place (CPU and GPU backends share them).
// Each throws nn::Error naming the function and the wrong size; returns the batch B.
#pragma once
#include <cstdint>
#include <span>
#include "nn/error.h"

namespace asyncps::nn {

// params: kMnistCnnParams floats; x: (B,784) with B <= max_batch.
int check_forward_args(const char* fn, int max_batch, std::span<const float> params, std::span<const float> x);
// The above, plus B > 0, labels: B values in 0..9, grad: kMnistCnnParams floats.
int check_step_args(const char* fn, int max_batch, std::span<const float> params, std::span<const float> x,
                    std::span<const std::uint8_t> labels, std::span<float> grad);

}  // namespace asyncps::nn
