// Compiles the file named by ASYNCPS_KERNELS_FILE once per CPU level of this build (cpu/level.h),
// each copy inside its own namespace ASYNCPS_KERNEL_NS (baseline, avx2, avx512) and with the
// compiler generating code for that level (GCC's #pragma GCC target, clang's attribute push):
// the pattern of Highway's foreach_target.h, for the GCC vector-extension kernels this project
// writes. The translation unit itself is compiled for the baseline, so every standard-library
// function it instantiates outside the kernels is baseline code: nothing a lower level may call
// is ever compiled for a higher one.
//
// In the kernel file (included several times: no include guard, no #include of its own; the
// headers it needs come before this one):
//   ASYNCPS_KERNEL_NS          the namespace to define everything in
//   ASYNCPS_KERNEL_LEVEL       0, 1, 2: the cpu::Level
//   ASYNCPS_KERNEL_VEC_FLOATS  floats in one of the level's widest vector registers (4, 8, 16)
//   ASYNCPS_KERNEL_VEC_REGS    how many of them the level has (16 or 32)
// Usage:
//   #define ASYNCPS_KERNELS_FILE "nn/kernels/all.inc"
//   #include "cpu/foreach_level.h"
#ifndef ASYNCPS_KERNELS_FILE
#error "define ASYNCPS_KERNELS_FILE before including cpu/foreach_level.h"
#endif

#define ASYNCPS_KERNEL_NS baseline
#define ASYNCPS_KERNEL_LEVEL 0
#if defined(__x86_64__)
#define ASYNCPS_KERNEL_VEC_FLOATS 4  // SSE2
#define ASYNCPS_KERNEL_VEC_REGS 16
#else
#define ASYNCPS_KERNEL_VEC_FLOATS 4  // NEON
#define ASYNCPS_KERNEL_VEC_REGS 32
#endif
#include ASYNCPS_KERNELS_FILE
#undef ASYNCPS_KERNEL_NS
#undef ASYNCPS_KERNEL_LEVEL
#undef ASYNCPS_KERNEL_VEC_FLOATS
#undef ASYNCPS_KERNEL_VEC_REGS

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#define ASYNCPS_KERNEL_NS avx2
#define ASYNCPS_KERNEL_LEVEL 1
#define ASYNCPS_KERNEL_VEC_FLOATS 8
#define ASYNCPS_KERNEL_VEC_REGS 16
#include ASYNCPS_KERNELS_FILE
#undef ASYNCPS_KERNEL_NS
#undef ASYNCPS_KERNEL_LEVEL
#undef ASYNCPS_KERNEL_VEC_FLOATS
#undef ASYNCPS_KERNEL_VEC_REGS
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#endif
#define ASYNCPS_KERNEL_NS avx512
#define ASYNCPS_KERNEL_LEVEL 2
#define ASYNCPS_KERNEL_VEC_FLOATS 16
#define ASYNCPS_KERNEL_VEC_REGS 32
#include ASYNCPS_KERNELS_FILE
#undef ASYNCPS_KERNEL_NS
#undef ASYNCPS_KERNEL_LEVEL
#undef ASYNCPS_KERNEL_VEC_FLOATS
#undef ASYNCPS_KERNEL_VEC_REGS
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // __x86_64__

#undef ASYNCPS_KERNELS_FILE
