// defines: asyncps::detail::scale_into_finite, dc_correct, all_finite, AlignedFloats
// The library's only loops over whole gradients (staging scale * grad before a push, and the
// non-finite guard on what is pushed). libasyncps is built for plain x86-64 (no -march: the
// installed library runs on any x86-64 CPU); these are compiled several times (GCC's
// target_clones: AVX-512F, AVX2, baseline) and the dynamic loader picks the best clone for the
// CPU it runs on (an ifunc), so staging keeps the speed -march=native gave it.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

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

}  // namespace asyncps::detail
