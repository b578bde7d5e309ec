// Included by cpu/foreach_level.h once per level, with ASYNCPS_KERNEL_LEVEL set (0 baseline,
// 1 avx2, 2 avx512): names the level's namespace, vector width and register count, has the
// compiler generate that level's code for ASYNCPS_KERNELS_FILE, then undoes it all.
// (No include guard: included several times.)
#if ASYNCPS_KERNEL_LEVEL == 0
#define ASYNCPS_KERNEL_NS baseline
#define ASYNCPS_KERNEL_VEC_FLOATS 4  // SSE2, NEON
#if defined(__x86_64__)
#define ASYNCPS_KERNEL_VEC_REGS 16
#else
#define ASYNCPS_KERNEL_VEC_REGS 32
#endif
#elif ASYNCPS_KERNEL_LEVEL == 1
#define ASYNCPS_KERNEL_NS avx2
#define ASYNCPS_KERNEL_VEC_FLOATS 8
#define ASYNCPS_KERNEL_VEC_REGS 16
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#elif ASYNCPS_KERNEL_LEVEL == 2
#define ASYNCPS_KERNEL_NS avx512
#define ASYNCPS_KERNEL_VEC_FLOATS 16
#define ASYNCPS_KERNEL_VEC_REGS 32
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#endif
#else
#error "ASYNCPS_KERNEL_LEVEL must be 0, 1 or 2"
#endif

#include ASYNCPS_KERNELS_FILE

#if ASYNCPS_KERNEL_LEVEL > 0  // (the baseline opened no target region)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
#undef ASYNCPS_KERNEL_NS
#undef ASYNCPS_KERNEL_VEC_FLOATS
#undef ASYNCPS_KERNEL_VEC_REGS
#undef ASYNCPS_KERNEL_LEVEL
