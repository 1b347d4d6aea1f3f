// CPU launchers for the bodies of elementwise_bodies.hpp: one parallel_for per op, each chunk a
// tight loop over contiguous indices that the compiler can vectorise (the body is a value type
// whose operator() is inlined; there is no per-element indirect call).
#pragma once

#include <atomic>
#include <cstdint>

#include "tenax/core/context.hpp"

namespace tenax::kernels::cpu::detail {

// Elements per chunk below which an op runs on the calling thread alone: splitting smaller
// arrays costs more in wake-ups than it saves.
inline constexpr std::int64_t kMinChunk = std::int64_t{1} << 15;

// The loop of one chunk, compiled twice on x86-64: for the baseline target and for AVX2, picked
// at run time. Element-wise bodies vectorise four doubles or eight floats wide under AVX2 (the
// polynomial exp/tanh/sigmoid of float_math.hpp run ~5x faster than the library calls they
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

inline bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") != 0;
  return has;
}
#endif

// body(i) for every i in [0, n).
template <class Body>
void for_each(CpuContext& context, std::int64_t n, const Body& body) {
  context.parallel_for(0, n, kMinChunk, [&body](std::int64_t begin, std::int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx2()) {
      run_chunk_avx2(body, begin, end);
      return;
    }
#endif
    run_chunk(body, begin, end);
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
