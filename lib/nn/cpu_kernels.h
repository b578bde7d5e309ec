// defines: asyncps::nn::cpu_kernel_level, cpu_kernel_levels
// The CPU kernels of this library (the layers of nn/conv3x3.h, nn/maxpool.h, nn/dense.h,
// nn/softmax_xent.h and the updates of nn/updates.h) are compiled once per instruction-set level
// (baseline, avx2, avx512 on x86-64; baseline on aarch64) and the best one this CPU runs is chosen
// at the first call; ASYNCPS_CPU_KERNELS=<level> forces a lower one (a level this CPU cannot run,
// or an unknown name, is an nn::Error at that first call).
#pragma once

#include <string>

namespace asyncps::nn {

// The level the kernels run at ("avx2"); nn::Error when ASYNCPS_CPU_KERNELS is unusable.
std::string cpu_kernel_level();

// Every level: what runs, what this CPU could run, what is compiled, e.g.
// "avx2 (this CPU runs baseline, avx2; compiled: baseline, avx2, avx512)".
std::string cpu_kernel_levels();

}  // namespace asyncps::nn
