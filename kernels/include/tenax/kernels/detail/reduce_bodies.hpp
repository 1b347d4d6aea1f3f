/// Reduction bodies (the combining functions and the per-element maps) shared by both backends;
/// the order they are folded in is reduction_order.hpp's.
/// @file
/// L = kReduceLanes = 16 lets the CPU keep the lanes in registers while it reads the block front
/// to back (a vectorised loop); on the GPU a reduction block is a group of 16 threads reading 64
/// contiguous bytes per step, with a shuffle tree for step 3.
///
/// Internal to the kernels layer.
#pragma once

#include <cstdint>
#include <span>

#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/kernels/sharded_reduction.hpp"

namespace tenax::kernels {

/// The K values a reduction kernel folds per element, or a block's K partials.
template <int K>
struct ReduceTerms {
  double v[K];
};

// ---- combining functions: identity and f(a, b) ----

struct PlusCombine {
  static constexpr ReduceCombine kind = ReduceCombine::plus;
  TENAX_HD static constexpr double identity() { return 0.0; }
  TENAX_HD double operator()(double a, double b) const { return a + b; }
};

/// NaN-propagating maximum.
struct MaxCombine {
  static constexpr ReduceCombine kind = ReduceCombine::max;
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

/// 1 for an infinite or NaN element, 0 otherwise (counts are exact in double up to 2^53).
template <class S>
struct NonfiniteMap {
  const S* x;
  TENAX_HD double operator()(std::int64_t i) const { return stored_is_nonfinite(x[i]) ? 1.0 : 0.0; }
};

/// Step 4, the last step of every shardable reduction on every backend: the `terms` sequences of
/// block partials (term-major, `blocks` each, on the host) of a reduction over `elements` elements
/// are combined by the tree of reduction_order.hpp into out[0, terms); inside a
/// ShardedReductionScope, with every rank's (the global result). Modifies `partials`.
/// finish_reduction<K> is the same for a number of terms known at compile time.
template <class Combine>
void finish_reduction_terms(double* partials, int terms, std::int64_t blocks, std::int64_t elements,
                            Combine f, std::span<double> out) {
  if (ShardedReductionScope* scope = ShardedReductionScope::active()) {
    scope->combine(std::span<const double>(partials, static_cast<std::size_t>(terms) * blocks),
                   terms, Combine::kind, elements, out.first(static_cast<std::size_t>(terms)));
    return;
  }
  for (int k = 0; k < terms; ++k) out[k] = combine_partials(partials + k * blocks, blocks, f);
}

template <int K, class Combine>
ReduceTerms<K> finish_reduction(double* partials, std::int64_t blocks, std::int64_t elements,
                                Combine f) {
  ReduceTerms<K> out;
  finish_reduction_terms(partials, K, blocks, elements, f, std::span<double>(out.v, K));
  return out;
}

/// The result of a shardable reduction over no local elements: the identity, or inside a
/// ShardedReductionScope the global result (an empty shard still takes part).
template <int K, class Combine = PlusCombine>
ReduceTerms<K> empty_reduction() {
  return finish_reduction<K>(nullptr, 0, 0, Combine{});
}

}  // namespace tenax::kernels
