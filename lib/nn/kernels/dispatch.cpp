// The public CPU kernels of lib/nn (nn/conv3x3.h, maxpool.h, dense.h, softmax_xent.h, updates.h)
// and nn/cpu_kernels.h: each call goes to the table of the active level (kernels/kernel_table.h).
#include <stdexcept>

#include "nn/cpu_kernels.h"
#include "nn/error.h"
#include "nn/kernels/kernel_table.h"

namespace asyncps::nn {
namespace kernels {

const Table& table_at(cpu::Level l) {
  switch (l) {
#if defined(__x86_64__)
    case cpu::Level::avx2: return avx2::table;
    case cpu::Level::avx512: return avx512::table;
#endif
    default: return baseline::table;
  }
}

const Table& active() {
  static const Table* t = [] {
    try {
      return &table_at(cpu::active_level());
    } catch (const std::invalid_argument& e) {
      throw Error(e.what());
    }
  }();
  return *t;
}

}  // namespace kernels

std::string cpu_kernel_level() {
  kernels::active();  // nn::Error when the variable is unusable
  return cpu::level_name(cpu::active_level());
}

std::string cpu_kernel_levels() {
  std::vector<cpu::Level> runs;
  for (cpu::Level l : cpu::compiled_levels())
    if (cpu::runnable(l)) runs.push_back(l);
  return cpu_kernel_level() + " (this CPU runs " + cpu::level_list(runs) + "; compiled: " +
         cpu::level_list(cpu::compiled_levels()) + ")";
}

void conv3x3_forward(const float* x, const float* w, const float* bias, float* out, Conv3x3Dims d) {
  kernels::active().conv3x3_forward(x, w, bias, out, d);
}
void conv3x3_backward(const float* x, const float* w, const float* dout, float* dw, float* db, float* dx,
                      Conv3x3Dims d) {
  kernels::active().conv3x3_backward(x, w, dout, dw, db, dx, d);
}
void conv3x3_backward_pooled(const float* x, const float* w, const std::int32_t* pool_idx, const float* dpool,
                             int PH, int PW, float* dw, float* db, float* dx, Conv3x3Dims d) {
  kernels::active().conv3x3_backward_pooled(x, w, pool_idx, dpool, PH, PW, dw, db, dx, d);
}
void maxpool2x2_forward(const float* x, float* out, std::int32_t* idx, Pool2x2Dims d) {
  kernels::active().maxpool2x2_forward(x, out, idx, d);
}
void maxpool2x2_backward(const float* dout, const std::int32_t* idx, float* dx, Pool2x2Dims d) {
  kernels::active().maxpool2x2_backward(dout, idx, dx, d);
}
void dense_forward(const float* x, const float* w, const float* b, float* y, DenseDims d) {
  kernels::active().dense_forward(x, w, b, y, d);
}
void dense_backward(const float* x, const float* w, const float* dy, float* dw, float* db, float* dx,
                    DenseDims d) {
  kernels::active().dense_backward(x, w, dy, dw, db, dx, d);
}
float softmax_xent_forward(const float* logits, const std::uint8_t* labels, float* probs, int B, int C) {
  return kernels::active().softmax_xent_forward(logits, labels, probs, B, C);
}
void softmax_xent_backward(const float* probs, const std::uint8_t* labels, float* dlogits, int B, int C) {
  kernels::active().softmax_xent_backward(probs, labels, dlogits, B, C);
}
void momentum_step(float* v_next, float* dir, const float* v, const float* g, std::size_t n, float mu, float keep) {
  kernels::active().momentum_step(v_next, dir, v, g, n, mu, keep);
}
void adam_step(float* m_next, float* s_next, float* dir, const float* m, const float* s, const float* g,
               std::size_t n, const AdamFactors& f) {
  kernels::active().adam_step(m_next, s_next, dir, m, s, g, n, f);
}
void adagrad_step(float* a_next, float* dir, const float* a, const float* g, std::size_t n, float epsilon) {
  kernels::active().adagrad_step(a_next, dir, a, g, n, epsilon);
}
void step_along(float* out, const float* p, const float* d, std::size_t n, float step) {
  kernels::active().step_along(out, p, d, n, step);
}
void ema_step(float* level, const float* x, std::size_t n, float a) { kernels::active().ema_step(level, x, n, a); }
void ema_trend_step(float* level, float* smooth, const float* x, std::size_t n, float a) {
  kernels::active().ema_trend_step(level, smooth, x, n, a);
}
void trend_average(float* out, const float* level, const float* smooth, std::size_t n) {
  kernels::active().trend_average(out, level, smooth, n);
}

}  // namespace asyncps::nn
