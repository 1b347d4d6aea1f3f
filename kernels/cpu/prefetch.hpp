// Software prefetch for the CPU stencil loops, shared by the fused stencil dots (krylov.cpp) and
// the explicit update (stencil.cpp). Private to kernels/cpu.
//
// How far ahead of the current point the stencil loops ask for the lines of the grid row (or
// plane) they will read next and of the output they will write. With the hardware prefetchers
// alone a core ran the stencil well below its streaming rate: on a 2-core AMD EPYC VM a 2048^2
// f64 laplacian_5pt_dot ran a quarter to a half faster on one thread with these hints. A
// prefetch never faults and never changes a result.
#pragma once

#include <cstdint>

namespace tenax::kernels::cpu {

inline constexpr std::int64_t kPrefetchBytes = 2048;
inline constexpr std::int64_t kCacheLineBytes = 64;

// Hints the lines of x[k .. k + count) into the cache, for reading (kWrite = 0) or writing (1),
// when they lie inside x[0 .. n).
template <int kWrite, class T>
inline void prefetch_range(const T* x, std::int64_t k, std::int64_t count, std::int64_t n) {
  constexpr auto kStep = static_cast<std::int64_t>(kCacheLineBytes / sizeof(T));
  for (std::int64_t e = 0; e < count; e += kStep) {
    if (k + e < n) __builtin_prefetch(x + k + e, kWrite, 3);
  }
}

// Elements of T that kPrefetchBytes cover: how far ahead to ask.
template <class T>
inline constexpr std::int64_t kPrefetchAhead = kPrefetchBytes /
                                               static_cast<std::int64_t>(sizeof(T));

}  // namespace tenax::kernels::cpu
