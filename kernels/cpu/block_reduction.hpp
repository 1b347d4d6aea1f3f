// The CPU's loops for the reduction order of reduction_order.hpp, shared by every CPU reduction
// (reduce.cpp, krylov.cpp, mixed_precision.cpp): the blocks of step 1 are spread over the
// context's threads by its static split, a thread runs whole blocks front to back with the lanes
// of step 2 in registers, folds them by the halving tree of step 3 (fold_lanes), and writes one
// partial per block and term; step 4 runs on the calling thread (finish_reduction), with every
// rank's partials inside a ShardedReductionScope. Nothing depends on which thread ran a block, so
// the bits are the same for every thread count and equal to the CUDA backend's.
// Private to kernels/cpu.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels::cpu {

// Blocks per parallel_for chunk at least (2^15 elements, as for the element-wise kernels).
inline constexpr std::int64_t kMinReduceBlocksPerChunk = 8;

// Step 3: the halving tree over one block's lanes; lane[0] is the block's partial.
template <class Combine = PlusCombine>
inline double fold_lanes(double (&lanes)[kReduceLanes], Combine f = {}) {
  for (int s = kReduceLanes / 2; s > 0; s /= 2) {
    for (int j = 0; j < s; ++j) lanes[j] = f(lanes[j], lanes[j + s]);
  }
  return lanes[0];
}

// Steps 2-3 for elements [begin, end) of one block, folding map(i) with f.
template <class Map, class Combine>
double fold_block(const Map& map, Combine f, std::int64_t begin, std::int64_t end) {
  double lanes[kReduceLanes];
  for (int j = 0; j < kReduceLanes; ++j) lanes[j] = Combine::identity();
  std::int64_t row = begin;
  for (; row + kReduceLanes <= end; row += kReduceLanes) {
    for (int j = 0; j < kReduceLanes; ++j) lanes[j] = f(lanes[j], map(row + j));
  }
  const int rest = static_cast<int>(end - row);
  for (int j = 0; j < rest; ++j) lanes[j] = f(lanes[j], map(row + j));
  return fold_lanes(lanes, f);
}

// Runs block(b, begin, end) on every reduction block b of n elements, over the context's threads.
template <class Block>
void for_each_reduce_block(CpuContext& context, std::int64_t n, std::int64_t min_blocks,
                           const Block& block) {
  context.parallel_for(0, reduce_block_count(n), min_blocks,
                       [&block, n](std::int64_t first, std::int64_t last) {
                         // The blocks of a chunk as an AVX2 copy where the CPU has it (the same
                         // bits: lane-wise operations).
                         detail::call_best([&] {
                           for (std::int64_t b = first; b < last; ++b) {
                             const std::int64_t begin = b * kReduceBlock;
                             block(b, begin, std::min(n, begin + kReduceBlock));
                           }
                         });
                       });
}

// The whole order for K reductions at once: block(begin, end) returns the K partials of a block
// (ReduceTerms<K>); the partials are combined by finish_reduction.
template <int K, class Combine = PlusCombine, class Block>
ReduceTerms<K> reduce_blocks(CpuContext& context, std::int64_t n, std::int64_t min_blocks,
                             const Block& block, Combine f = {}) {
  const std::int64_t blocks = reduce_block_count(n);
  std::vector<double> partials(static_cast<std::size_t>(K * blocks));
  double* out = partials.data();
  for_each_reduce_block(
      context, n, min_blocks,
      [&block, out, blocks](std::int64_t b, std::int64_t begin, std::int64_t end) {
        const ReduceTerms<K> t = block(begin, end);
        for (int k = 0; k < K; ++k) out[k * blocks + b] = t.v[k];
      });
  return finish_reduction<K>(out, blocks, n, f);
}

}  // namespace tenax::kernels::cpu
