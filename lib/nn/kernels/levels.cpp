// The CPU kernels of lib/nn, compiled once per instruction-set level (cpu/foreach_level.h): the
// tables baseline::table, avx2::table, avx512::table of kernels/kernel_table.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nn/kernels/kernel_table.h"

#define ASYNCPS_KERNELS_FILE "nn/kernels/all.inc"
#include "cpu/foreach_level.h"
