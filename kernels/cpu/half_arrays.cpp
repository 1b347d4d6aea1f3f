// Array conversions of half_arrays.hpp: F16C where the CPU has it, half.hpp's branch-free code
// (compiled for AVX2 too, picked at run time) otherwise.
#include "tenax/kernels/detail/half_arrays.hpp"

#include <type_traits>

#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/cpu_simd.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TENAX_HALF_ARRAYS_X86 1
#endif

namespace tenax::kernels::cpu {
namespace {

// The loops, inlined into a baseline and an AVX2 copy (eight lanes of the branch-free integer
// code, with its per-lane shifts).
template <class S>
[[gnu::always_inline]] inline void widen_loop(const S* in, float* out,
                                              std::int64_t count) noexcept {
  for (std::int64_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

template <class S>
[[gnu::always_inline]] inline void narrow_loop(const float* in, S* out,
                                               std::int64_t count) noexcept {
  for (std::int64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<S, Half>) {
      out[i] = to_half(in[i]);
    } else {
      out[i] = to_bfloat16(in[i]);
    }
  }
}

#if TENAX_HALF_ARRAYS_X86
template <class S>
__attribute__((target("avx2"))) void widen_avx2(const S* in, float* out,
                                                std::int64_t count) noexcept {
  widen_loop(in, out, count);
}
template <class S>
__attribute__((target("avx2"))) void narrow_avx2(const float* in, S* out,
                                                 std::int64_t count) noexcept {
  narrow_loop(in, out, count);
}

__attribute__((target("avx2,f16c"))) void widen_f16c(const Half* in, float* out,
                                                     std::int64_t count) noexcept {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(bits));
  }
  for (; i < count; ++i) out[i] = to_float(in[i]);
}

__attribute__((target("avx2,f16c"))) void narrow_f16c(const float* in, Half* out,
                                                      std::int64_t count) noexcept {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    // Round to nearest even given in the instruction, not taken from the MXCSR.
    const __m128i bits =
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bits);
  }
  for (; i < count; ++i) out[i] = to_half(in[i]);
}

#endif

}  // namespace

bool half_arrays_use_f16c() {
#if TENAX_HALF_ARRAYS_X86
  return cpu_simd().f16c;
#else
  return false;
#endif
}

void widen_to_float(const Half* in, float* out, std::int64_t count) {
#if TENAX_HALF_ARRAYS_X86
  if (half_arrays_use_f16c()) return widen_f16c(in, out, count);
  if (cpu_simd().avx2) return widen_avx2(in, out, count);
#endif
  widen_loop(in, out, count);
}

void widen_to_float(const BFloat16* in, float* out, std::int64_t count) {
#if TENAX_HALF_ARRAYS_X86
  if (cpu_simd().avx2) return widen_avx2(in, out, count);
#endif
  widen_loop(in, out, count);
}

void narrow_from_float(const float* in, Half* out, std::int64_t count) {
#if TENAX_HALF_ARRAYS_X86
  if (half_arrays_use_f16c()) return narrow_f16c(in, out, count);
  if (cpu_simd().avx2) return narrow_avx2(in, out, count);
#endif
  narrow_loop(in, out, count);
}

void narrow_from_float(const float* in, BFloat16* out, std::int64_t count) {
#if TENAX_HALF_ARRAYS_X86
  if (cpu_simd().avx2) return narrow_avx2(in, out, count);
#endif
  narrow_loop(in, out, count);
}

}  // namespace tenax::kernels::cpu
