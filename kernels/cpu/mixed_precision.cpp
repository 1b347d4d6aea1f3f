// CPU backend of the mixed-precision checks find_nonfinite and unscale_and_measure.
//
// Both run over the reduction blocks of reduction_order.hpp with block_reduction.hpp's loops and
// combine the per-block results on the calling thread, so nothing depends on which thread ran a
// block. The sum of squares is folded in the order of ops::dot and of the CUDA backend; the counts
// and the first index are integers, exact in any order. Both are local to this process's tensor:
// a ShardedReductionScope does not extend them across ranks (they check one rank's gradients).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "block_reduction.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels::cpu {
namespace {

// Runs block(b, begin, end) for every reduction block b over the context's threads.
template <class Block>
void for_each_block(CpuContext& context, std::int64_t n, const Block& block) {
  for_each_reduce_block(context, n, kMinReduceBlocksPerChunk, block);
}

struct NonfiniteBlock {
  std::int64_t nan_count = 0;
  std::int64_t inf_count = 0;
  std::int64_t first_index = -1;
};

// Counts with a branch-free loop (it vectorises); the rare block that has a non-finite element
// is scanned again for the first one.
template <class S>
NonfiniteBlock scan_block(const NonfiniteKindMap<S>& map, std::int64_t begin, std::int64_t end) {
  NonfiniteBlock result;
  // The predicates of NonfiniteKindMap, counted separately so that the loop vectorises.
  int nans = 0;  // a block has at most kReduceBlock elements
  int nonfinite = 0;
  if constexpr (sizeof(S) == 2) {
    // On the raw 16-bit patterns (stored_is_nan/stored_is_nonfinite on the bits), so that the
    // loop vectorises as 16-bit integer compares.
    constexpr std::uint16_t exponent = std::is_same_v<S, Half> ? 0x7C00u : 0x7F80u;
    const auto* bits = reinterpret_cast<const std::uint16_t*>(map.x);
    for (std::int64_t i = begin; i < end; ++i) {
      const std::uint16_t magnitude = bits[i] & 0x7FFFu;
      nans += magnitude > exponent ? 1 : 0;
      nonfinite += magnitude >= exponent ? 1 : 0;
    }
  } else {
    for (std::int64_t i = begin; i < end; ++i) {
      nans += stored_is_nan(map.x[i]) ? 1 : 0;
      nonfinite += stored_is_nonfinite(map.x[i]) ? 1 : 0;
    }
  }
  result.nan_count = nans;
  result.inf_count = nonfinite - nans;
  if (nonfinite > 0) {
    for (std::int64_t i = begin; i < end; ++i) {
      if (map(i) != 0) {
        result.first_index = i;
        break;
      }
    }
  }
  return result;
}

// Steps 2-3 of the reduction order for the squares of one block, and the block's non-finite
// count. A non-finite stored value makes its square, and so the block's sum, inf or NaN; only
// then (or when finite f64 squares overflow) is the block read again to count, which keeps the
// streaming loop to one accumulator array in registers.
template <bool kWrite, class S>
MeasureTerms measure_block(const UnscaleMeasureBody<S>& body, std::int64_t begin,
                           std::int64_t end) {
  double squares[kReduceLanes] = {};
  std::int64_t row = begin;
  for (; row + kReduceLanes <= end; row += kReduceLanes) {
    for (int j = 0; j < kReduceLanes; ++j)
      squares[j] += body.template terms<kWrite>(row + j).square;
  }
  for (int j = 0; row + j < end; ++j) squares[j] += body.template terms<kWrite>(row + j).square;
  fold_lanes(squares);
  double nonfinite = 0.0;
  if (is_nonfinite(squares[0])) {
    for (std::int64_t i = begin; i < end; ++i) nonfinite += body.template terms<false>(i).nonfinite;
  }
  return {squares[0], nonfinite};
}

}  // namespace

ops::NonfiniteReport find_nonfinite(CpuContext& context, const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "find_nonfinite", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::int64_t n = x.numel();
    const auto* data = static_cast<const S*>(x.data());
    std::vector<NonfiniteBlock> blocks(static_cast<std::size_t>(reduce_block_count(n)));
    NonfiniteBlock* out = blocks.data();
    const NonfiniteKindMap<S> map{data};
    for_each_block(context, n, [&map, out](std::int64_t b, std::int64_t begin, std::int64_t end) {
      out[b] = scan_block(map, begin, end);
    });
    ops::NonfiniteReport report;
    for (const NonfiniteBlock& block : blocks) {
      report.nan_count += block.nan_count;
      report.inf_count += block.inf_count;
      if (report.first_index < 0) report.first_index = block.first_index;
    }
    if (report.first_index >= 0)
      report.first_value = static_cast<double>(load(data[report.first_index]));
    return report;
  });
}

ops::UnscaleReport unscale_and_measure(CpuContext& context, const Tensor& t, double inv_scale) {
  return kernels::detail::dispatch_float(t.dtype(), "unscale_and_measure", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::int64_t n = t.numel();
    const std::int64_t count = reduce_block_count(n);
    std::vector<double> squares(static_cast<std::size_t>(count));
    std::vector<double> nonfinite(static_cast<std::size_t>(count));
    double* sq = squares.data();
    double* nf = nonfinite.data();
    const UnscaleMeasureBody<S> body{static_cast<S*>(t.data()),
                                     static_cast<compute_t<S>>(inv_scale), inv_scale != 1.0};
    for_each_block(
        context, n, [&body, sq, nf](std::int64_t b, std::int64_t begin, std::int64_t end) {
          const UnscaleMeasureBody<S> local = body;
          const MeasureTerms terms = local.write ? measure_block<true>(local, begin, end)
                                                 : measure_block<false>(local, begin, end);
          sq[b] = terms.square;
          nf[b] = terms.nonfinite;
        });
    ops::UnscaleReport report;
    for (double c : nonfinite) report.nonfinite_count += static_cast<std::int64_t>(c);
    report.sum_of_squares = combine_partials(sq, count, PlusCombine{});
    return report;
  });
}

}  // namespace tenax::kernels::cpu
