// CPU launchers for the bodies of elementwise_bodies.hpp: one parallel_for per op, each chunk a
// tight loop over contiguous indices that the compiler can vectorise (the body is a value type
// whose operator() is inlined; there is no per-element indirect call).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/cpu_simd.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/half_arrays.hpp"

namespace tenax::kernels::cpu::detail {

// Elements per chunk below which an op runs on the calling thread alone: splitting smaller
// arrays costs more in wake-ups than it saves.
inline constexpr std::int64_t kMinChunk = std::int64_t{1} << 15;

// The loop of one chunk, compiled for the baseline target and for AVX2 (and AVX-512 below),
// picked at run time. Element-wise bodies vectorise four doubles or eight floats wide under AVX2
// (the polynomial exp/tanh/sigmoid of float_math.hpp run ~5x faster than the library calls they
// replace). The bits are the same either way: each element's arithmetic is the same sequence of
// IEEE operations (no contraction, no FMA in the avx2 target, no reassociation), only several
// elements run side by side.
template <class Body>
void run_chunk(const Body& body, std::int64_t begin, std::int64_t end) {
  const Body local = body;  // members in registers, not reloaded through a reference
  for (std::int64_t i = begin; i < end; ++i) local(i);
}

#if defined(__x86_64__) && defined(__GNUC__)
template <class Body>
__attribute__((target("avx2"))) void run_chunk_avx2(const Body& body, std::int64_t begin,
                                                    std::int64_t end) {
  const Body local = body;
  for (std::int64_t i = begin; i < end; ++i) local(i);
}

// A third copy for AVX-512 with 512-bit vectors (GCC: clang has no per-function vector width):
// eight doubles or sixteen floats side by side, which halves the time of the bodies that compute
// in double (float_math.hpp's exp, tanh, sigmoid and erfc: the activations and their gradients).
// Same bits: the library is compiled without contraction, so the FMA of AVX-512 is never used.
// Flattened, as call_avx2 below: a function the body calls (float_math.hpp's) left out of line
// would run one element at a time.
#if !defined(__clang__)
#define TENAX_RUN_CHUNK_AVX512 1
template <class Body>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512"), flatten)) void
run_chunk_avx512(const Body& body, std::int64_t begin, std::int64_t end) {
  const Body local = body;
  for (std::int64_t i = begin; i < end; ++i) local(i);
}
#endif
#endif

// The float loop of a chunk: AVX-512 or AVX2 where the CPU has it and TENAX_CPU_SIMD allows it
// (cpu_simd).
template <class Body>
void run_chunk_best(const Body& body, std::int64_t begin, std::int64_t end) {
#if defined(TENAX_RUN_CHUNK_AVX512)
  if (cpu_simd().avx512) {
    run_chunk_avx512(body, begin, end);
    return;
  }
#endif
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_simd().avx2) {
    run_chunk_avx2(body, begin, end);
    return;
  }
#endif
  run_chunk(body, begin, end);
}

// f() compiled twice on x86-64, like run_chunk_best's loop, for loops that are not a body over
// contiguous indices (the sparse products' groups of rows, the stencils, the blocks of the
// reductions). The AVX2 copy is flattened: f and everything it calls are inlined into it, so that
// they are compiled for AVX2 too (a call left out of line would run baseline code, correct but no
// faster).
#if defined(__x86_64__) && defined(__GNUC__)
template <class F>
__attribute__((target("avx2"), flatten)) decltype(auto) call_avx2(const F& f) {
  return f();
}
#endif

template <class F>
decltype(auto) call_best(const F& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_simd().avx2) return call_avx2(f);
#endif
  return f();
}

// ---- f16 bodies staged through float blocks ----
//
// The hottest f16 bodies (the element-wise ops of a mixed-precision training step) run, where the
// CPU has F16C, as their float twin over blocks of kStageBlock elements: the f16 inputs widened
// with VCVTPH2PS, the float body, the result narrowed with VCVTPS2PH (half_arrays.hpp). The bits
// are those of the f16 body: it computes in float too, and the conversions are the same. A block
// is read whole before it is written, so in-place ops (out == x) stay correct.
inline constexpr std::int64_t kStageBlock = 256;

template <class Body>
struct F16Staging {
  static constexpr bool kStaged = false;
};

template <class Op>
struct F16Staging<UnaryBody<Op, Half>> {
  static constexpr bool kStaged = true;
  static void block(const UnaryBody<Op, Half>& body, std::int64_t at, std::int64_t count) {
    float x[kStageBlock];
    widen_to_float(body.x + at, x, count);
    run_chunk_best(UnaryBody<Op, float>{x, x, body.op}, 0, count);
    narrow_from_float(x, body.out + at, count);
  }
};

template <class Op>
struct F16Staging<BinaryBody<Op, Half>> {
  static constexpr bool kStaged = true;
  static void block(const BinaryBody<Op, Half>& body, std::int64_t at, std::int64_t count) {
    float a[kStageBlock];
    float b[kStageBlock];
    widen_to_float(body.a + at, a, count);
    widen_to_float(body.b + at, b, count);
    run_chunk_best(BinaryBody<Op, float>{a, b, a, body.op}, 0, count);
    narrow_from_float(a, body.out + at, count);
  }
};

template <>
struct F16Staging<AxpbyBody<Half>> {
  static constexpr bool kStaged = true;
  static void block(const AxpbyBody<Half>& body, std::int64_t at, std::int64_t count) {
    float x[kStageBlock];
    float y[kStageBlock];
    widen_to_float(body.x + at, x, count);
    widen_to_float(body.y + at, y, count);
    run_chunk_best(AxpbyBody<float>{x, y, body.a, body.b}, 0, count);
    narrow_from_float(y, body.y + at, count);
  }
};

template <>
struct F16Staging<AxBody<Half>> {
  static constexpr bool kStaged = true;
  static void block(const AxBody<Half>& body, std::int64_t at, std::int64_t count) {
    float x[kStageBlock];
    widen_to_float(body.x + at, x, count);
    run_chunk_best(AxBody<float>{x, x, body.a}, 0, count);
    narrow_from_float(x, body.y + at, count);
  }
};

// f16 <-> f32 casts are the conversions themselves.
template <>
struct F16Staging<CastBody<float, Half>> {
  static constexpr bool kStaged = true;
  static void block(const CastBody<float, Half>& body, std::int64_t at, std::int64_t count) {
    widen_to_float(body.src + at, body.dst + at, count);
  }
};

template <>
struct F16Staging<CastBody<Half, float>> {
  static constexpr bool kStaged = true;
  static void block(const CastBody<Half, float>& body, std::int64_t at, std::int64_t count) {
    narrow_from_float(body.src + at, body.dst + at, count);
  }
};

// body(i) for every i in [0, n).
template <class Body>
void for_each(CpuContext& context, std::int64_t n, const Body& body) {
  context.parallel_for(0, n, kMinChunk, [&body](std::int64_t begin, std::int64_t end) {
    if constexpr (F16Staging<Body>::kStaged) {
      if (half_arrays_use_f16c()) {
        for (std::int64_t at = begin; at < end; at += kStageBlock) {
          F16Staging<Body>::block(body, at, std::min(kStageBlock, end - at));
        }
        return;
      }
    }
    run_chunk_best(body, begin, end);
  });
}

// Runs body(i) (returning 0 or 1) for every i in [0, n), all of them, and returns whether any
// returned 1.
template <class Body>
bool for_each_any(CpuContext& context, std::int64_t n, const Body& body) {
  std::atomic<int> found{0};
  context.parallel_for(0, n, kMinChunk, [&body, &found](std::int64_t begin, std::int64_t end) {
    const Body local = body;
    int any = 0;
    for (std::int64_t i = begin; i < end; ++i) any |= local(i);
    if (any != 0) found.store(1, std::memory_order_relaxed);
  });
  return found.load(std::memory_order_relaxed) != 0;
}

}  // namespace tenax::kernels::cpu::detail
