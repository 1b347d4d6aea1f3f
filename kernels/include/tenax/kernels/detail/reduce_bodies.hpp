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

/// Levels the pairwise tree of block partials can have (m < 2^63 blocks).
inline constexpr int kMaxTreeDepth = 64;

/// One line of n terms, term(k) for k in [0, n), folded with f (identity `identity`) in type C by
/// the order of reduction_order.hpp, by one thread: blocks of kReduceBlock terms, kReduceLanes
/// lanes each (a whole lane row at a time, so a CPU loop keeps the lanes in vector registers),
/// the halving tree, and the pairwise tree over the blocks, built as a binary counter (two nodes
/// of one level merge as soon as both exist; the nodes left at the end fold right to left, which
/// carries a node with no right sibling up unchanged). The row reductions of the axis
/// reductions, layer normalisation and softmax.
template <class C, class Combine, class Term>
TENAX_HD C fold_line(std::int64_t n, const Combine& f, C identity, const Term& term) {
  C nodes[kMaxTreeDepth];
  int levels[kMaxTreeDepth];
  int depth = 0;
  for (std::int64_t first = 0; first < n; first += kReduceBlock) {
    const std::int64_t last = n - first < kReduceBlock ? n : first + kReduceBlock;
    C lanes[kReduceLanes];
    for (int l = 0; l < kReduceLanes; ++l) lanes[l] = identity;
    std::int64_t k = first;
    for (; k + kReduceLanes <= last; k += kReduceLanes) {
      for (int l = 0; l < kReduceLanes; ++l) lanes[l] = f(lanes[l], term(k + l));
    }
    for (int l = 0; k + l < last; ++l) lanes[l] = f(lanes[l], term(k + l));
    for (int s = kReduceLanes / 2; s >= 1; s /= 2) {
      for (int l = 0; l < s; ++l) lanes[l] = f(lanes[l], lanes[l + s]);
    }
    nodes[depth] = lanes[0];
    levels[depth] = 0;
    ++depth;
    while (depth >= 2 && levels[depth - 2] == levels[depth - 1]) {
      nodes[depth - 2] = f(nodes[depth - 2], nodes[depth - 1]);
      ++levels[depth - 2];
      --depth;
    }
  }
  C result = identity;
  if (depth > 0) {
    result = nodes[depth - 1];
    for (int k = depth - 2; k >= 0; --k) result = f(nodes[k], result);
  }
  return result;
}

/// The sum of fold_line in type C.
template <class C, class Term>
TENAX_HD C ordered_sum(std::int64_t n, const Term& term) {
  return fold_line<C>(
      n, [](C a, C b) { return a + b; }, C(0), term);
}

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
