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

#define ASYNCPS_KERNEL_LEVEL 0
#include "cpu/one_level.h"
#if defined(__x86_64__)
#define ASYNCPS_KERNEL_LEVEL 1
#include "cpu/one_level.h"
#define ASYNCPS_KERNEL_LEVEL 2
#include "cpu/one_level.h"
#endif

#undef ASYNCPS_KERNELS_FILE
