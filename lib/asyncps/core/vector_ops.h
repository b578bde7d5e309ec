// defines: asyncps::detail::scale_into_finite, dc_correct, all_finite, AlignedFloats, VectorOps, vector_ops_at
// The library's only loops over whole gradients (staging scale * grad before a push, and the
// non-finite guard on what is pushed). libasyncps is built for plain x86-64 (no -march: the
// installed library runs on any x86-64 CPU); these are compiled once per CPU level
// (vector_ops.inc through lib/cpu's cpu/foreach_level.h: baseline, avx2, avx512) and the level of
// cpu::active_level() runs (asyncps::cpu_kernel_level(), ASYNCPS_CPU_KERNELS).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

#include "cpu/level.h"

namespace asyncps::detail {

// The library's staging buffers (what scale_into_finite writes and MPI reads) start on a cache
// line: a vector store that straddles two lines costs about twice one that does not, and
// malloc's 16-byte alignment made the staging speed depend on where the allocation fell.
template <class T>
struct CacheAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheAligned() = default;
  template <class U>
  CacheAligned(const CacheAligned<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
};
template <class T, class U>
bool operator==(const CacheAligned<T>&, const CacheAligned<U>&) noexcept {
  return true;  // stateless: any one frees what another allocated
}
using AlignedFloats = std::vector<float, CacheAligned<float>>;

// out[i] = scale * in[i] for i in [0, n) (out and in may not overlap); true when every out[i] is
// finite. One pass: what a push stages is checked as it is written.
bool scale_into_finite(float* out, const float* in, std::size_t n, float scale) noexcept;

// DC-ASGD's compensated gradient: out[i] = g[i] + lambda * g[i]^2 * (now[i] - read[i]).
void dc_correct(float* out, const float* g, const float* now, const float* read, std::size_t n, float lambda) noexcept;

// True when no element of v[0, n) is NaN or Inf.
bool all_finite(const float* v, std::size_t n) noexcept;

// The three at one CPU level (the functions above call the active level's); tests run each.
struct VectorOps {
  bool (*scale_into_finite)(float*, const float*, std::size_t, float) noexcept;
  void (*dc_correct)(float*, const float*, const float*, const float*, std::size_t, float) noexcept;
  bool (*all_finite)(const float*, std::size_t) noexcept;
};
// Level l's (one of cpu::compiled_levels()).
const VectorOps& vector_ops_at(cpu::Level l);

}  // namespace asyncps::detail
