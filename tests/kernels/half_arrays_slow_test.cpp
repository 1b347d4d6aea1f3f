// Every one of the 2^32 float patterns narrowed to f16 and bf16 by half_arrays.hpp's array
// conversions (F16C where the CPU has it) gives the bits of half.hpp's scalar conversions, which
// core's half_slow_test checks against an independent reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/half_arrays.hpp"

namespace tenax {
namespace {

template <class S>
std::uint64_t mismatches_in(std::uint64_t begin, std::uint64_t end) {
  constexpr std::uint64_t kBlock = std::uint64_t{1} << 16;
  std::vector<float> values(kBlock);
  std::vector<S> narrowed(kBlock);
  std::uint64_t mismatches = 0;
  for (std::uint64_t start = begin; start < end; start += kBlock) {
    const std::uint64_t count = std::min(kBlock, end - start);
    for (std::uint64_t i = 0; i < count; ++i) {
      values[i] = float_of(static_cast<std::uint32_t>(start + i));
    }
    kernels::cpu::narrow_from_float(values.data(), narrowed.data(),
                                    static_cast<std::int64_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint16_t expected =
          std::is_same_v<S, Half> ? float_to_half_bits(values[i]) : float_to_bf16_bits(values[i]);
      mismatches += narrowed[i].bits != expected ? 1 : 0;
    }
  }
  return mismatches;
}

template <class S>
std::uint64_t mismatches_in_every_float() {
  constexpr std::uint64_t kPatterns = std::uint64_t{1} << 32;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> total{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::uint64_t begin = kPatterns / threads * t;
      const std::uint64_t end = t + 1 == threads ? kPatterns : kPatterns / threads * (t + 1);
      total += mismatches_in<S>(begin, end);
    });
  }
  for (std::thread& worker : workers) worker.join();
  return total.load();
}

TEST(HalfArraysExhaustive, EveryFloatNarrowsToF16AsTheScalarConversion) {
  EXPECT_EQ(mismatches_in_every_float<Half>(), 0u);
}

TEST(HalfArraysExhaustive, EveryFloatNarrowsToBF16AsTheScalarConversion) {
  EXPECT_EQ(mismatches_in_every_float<BFloat16>(), 0u);
}

}  // namespace
}  // namespace tenax
