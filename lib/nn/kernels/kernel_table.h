// defines: asyncps::nn::kernels::Table, table_at, active
// The CPU kernels of one instruction-set level as a table of functions; kernels/levels.cpp
// defines one table per compiled level (baseline::table, avx2::table, avx512::table) and
// kernels/dispatch.cpp routes every public kernel of nn/ through the active one.
#pragma once

#include "cpu/level.h"
#include "nn/conv3x3.h"
#include "nn/dense.h"
#include "nn/maxpool.h"
#include "nn/softmax_xent.h"
#include "nn/updates.h"

namespace asyncps::nn::kernels {

struct Table {
  decltype(&nn::conv3x3_forward) conv3x3_forward;
  decltype(&nn::conv3x3_backward) conv3x3_backward;
  decltype(&nn::conv3x3_backward_pooled) conv3x3_backward_pooled;
  decltype(&nn::maxpool2x2_forward) maxpool2x2_forward;
  decltype(&nn::maxpool2x2_backward) maxpool2x2_backward;
  decltype(&nn::dense_forward) dense_forward;
  decltype(&nn::dense_backward) dense_backward;
  decltype(&nn::softmax_xent_forward) softmax_xent_forward;
  decltype(&nn::softmax_xent_backward) softmax_xent_backward;
  decltype(&nn::momentum_step) momentum_step;
  decltype(&nn::adam_step) adam_step;
  decltype(&nn::adagrad_step) adagrad_step;
  decltype(&nn::step_along) step_along;
  decltype(&nn::ema_step) ema_step;
  decltype(&nn::ema_trend_step) ema_trend_step;
  decltype(&nn::trend_average) trend_average;
};

namespace baseline { extern const Table table; }
#if defined(__x86_64__)
namespace avx2 { extern const Table table; }
namespace avx512 { extern const Table table; }
#endif

// The table of level l (which must be one of cpu::compiled_levels()).
const Table& table_at(cpu::Level l);

// The table of cpu::active_level(), looked up once; nn::Error when ASYNCPS_CPU_KERNELS is unusable.
const Table& active();

}  // namespace asyncps::nn::kernels
