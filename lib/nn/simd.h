// Tiny portable SIMD helper (GCC/Clang vector extensions): v8f is 8 floats, one AVX register
// on x86-64 with -march=native, split into narrower registers (or scalars) elsewhere.
#pragma once

#include <cstring>

namespace asyncps::nn::simd {

typedef float v8f __attribute__((vector_size(32)));

inline v8f load8(const float* p) {  // unaligned load of p[0..8)
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }  // unaligned store
inline v8f splat8(float s) { return v8f{s, s, s, s, s, s, s, s}; }

}  // namespace asyncps::nn::simd
