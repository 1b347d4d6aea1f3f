// Reduction bodies and the fixed reduction order shared by both backends.
//
// Order (the same on CPU and GPU, so both return the same bits whatever the thread count):
//  1. The input is cut into blocks of kReduceBlock consecutive elements (the last may be short).
//  2. Within a block, lane j (0 <= j < kReduceLanes) folds the mapped elements j, j + L, j + 2L,
//     ... of the block in increasing order, starting from the identity (L = kReduceLanes).
//  3. The lanes are folded by a halving tree: for s = L/2, L/4, ..., 1: lane[j] = f(lane[j],
//     lane[j + s]) for j < s. lane[0] is the block's partial.
//  4. The partials p[0..m) are combined level by level: p'[i] = f(p[2i], p[2i + 1]) and, when m
//     is odd, p'[m/2] = p[m - 1]; until one value is left (the identity when m == 0).
// L = 16 lets the CPU keep the lanes in registers while it reads the block front to back (a
// vectorised loop); on the GPU a reduction block is a group of 16 threads reading 64 contiguous
// bytes per step, with a shuffle tree for step 3.
//
// Internal to the kernels layer.
#pragma once

#include <cstdint>

#include "tenax/kernels/elementwise_bodies.hpp"

namespace tenax::kernels {

inline constexpr int kReduceLanes = 16;
inline constexpr std::int64_t kReduceBlock = 4096;
static_assert(kReduceBlock % kReduceLanes == 0, "a block is a whole number of lane rows");

[[nodiscard]] TENAX_HD constexpr std::int64_t reduce_block_count(std::int64_t n) noexcept {
  return (n + kReduceBlock - 1) / kReduceBlock;
}

// ---- combining functions: identity and f(a, b) ----

struct PlusCombine {
  TENAX_HD static constexpr double identity() { return 0.0; }
  TENAX_HD double operator()(double a, double b) const { return a + b; }
};

// NaN-propagating maximum.
struct MaxCombine {
  TENAX_HD static constexpr double identity() { return double_of(0xfff0000000000000u); }  // -inf
  TENAX_HD double operator()(double a, double b) const { return (a != a || a > b) ? a : b; }
};

// ---- maps: element i -> the double that is folded ----

template <class S>
struct ValueMap {
  const S* x;
  TENAX_HD double operator()(std::int64_t i) const { return static_cast<double>(load(x[i])); }
};

template <class S>
struct ProductMap {
  const S* x;
  const S* y;
  TENAX_HD double operator()(std::int64_t i) const {
    return static_cast<double>(load(x[i])) * static_cast<double>(load(y[i]));
  }
};

template <class S>
struct SquareMap {
  const S* x;
  TENAX_HD double operator()(std::int64_t i) const {
    const double v = static_cast<double>(load(x[i]));
    return v * v;
  }
};

// 1 for an infinite or NaN element, 0 otherwise (counts are exact in double up to 2^53).
template <class S>
struct NonfiniteMap {
  const S* x;
  TENAX_HD double operator()(std::int64_t i) const { return stored_is_nonfinite(x[i]) ? 1.0 : 0.0; }
};

// Step 4 on the host, in place (each level reads p[2i], p[2i + 1] before p[i] is written).
template <class Combine>
double combine_partials(double* p, std::int64_t m, Combine f) {
  if (m == 0) return Combine::identity();
  while (m > 1) {
    const std::int64_t pairs = m / 2;
    for (std::int64_t i = 0; i < pairs; ++i) p[i] = f(p[2 * i], p[2 * i + 1]);
    if (m % 2 != 0) p[pairs] = p[m - 1];
    m = pairs + m % 2;
  }
  return p[0];
}

}  // namespace tenax::kernels
