// The element-wise update rules of the worker's optimizers and of the chief's moving average,
// over n floats each, compiled for every CPU level like the layers (nn/cpu_kernels.h). Outputs
// never alias inputs.
#pragma once

#include <cstddef>

namespace asyncps::nn {

// Momentum: v_next = mu v + g; dir = keep v_next.
void momentum_step(float* v_next, float* dir, const float* v, const float* g, std::size_t n, float mu, float keep);

// Adam's constants for one step: c1 = 1 / (1 - beta1^t), c2 = 1 / (1 - beta2^t).
struct AdamFactors {
  float beta1, beta2, c1, c2, epsilon;
};
// Adam: m_next = b1 m + (1 - b1) g; s_next = b2 s + (1 - b2) g^2;
// dir = c1 m_next / (sqrt(c2 s_next) + eps).
void adam_step(float* m_next, float* s_next, float* dir, const float* m, const float* s, const float* g,
               std::size_t n, const AdamFactors& f);

// Adagrad: a_next = a + g^2; dir = g / (sqrt(a_next) + eps).
void adagrad_step(float* a_next, float* dir, const float* a, const float* g, std::size_t n, float epsilon);

// out = p - step d (a weight prediction along the last direction).
void step_along(float* out, const float* p, const float* d, std::size_t n, float step);

// An exponential moving average in place: level -= a (level - x), a = 1 - decay.
void ema_step(float* level, const float* x, std::size_t n, float a);

// The same, and its own average: smooth -= a (smooth - level), with the new level.
void ema_trend_step(float* level, float* smooth, const float* x, std::size_t n, float a);

// out = 2 level - smooth (Brown's double exponential smoothing: the trend without its lag).
void trend_average(float* out, const float* level, const float* smooth, std::size_t n);

}  // namespace asyncps::nn
