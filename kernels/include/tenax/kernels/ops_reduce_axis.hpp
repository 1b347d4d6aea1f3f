/// Reductions along one axis: sum, max, min and mean, in the fixed order of reduction_order.hpp.
/// @file
/// Each output element reduces the n elements of its line along the axis (the line's elements
/// numbered 0..n-1 along the axis). They are widened to f64 and folded in exactly the order of
/// reduction_order.hpp, with the line standing for the whole reduction: blocks of kReduceBlock
/// elements, kReduceLanes lanes per block folded in increasing order, the lanes' halving tree, the
/// pairwise tree of the block partials. The result is rounded once to x's dtype. So a line gives
/// the bits ops::sum / ops::max give for the same elements as a 1-D tensor (after that rounding),
/// and the CPU and CUDA backends give the same bits whatever the thread count. Each line is folded
/// by one thread (no split of a long line over threads). The reduction is local: it does not
/// combine across ranks in a ShardedReductionScope.
///
/// - sum: 0 for an empty line.
/// - max, min: NaN when any element is NaN; UsageError for an empty line (no identity). -0 and +0
///   compare equal; which one is returned follows the fixed order.
/// - mean: the f64 sum divided by n in f64, rounded once; NaN for an empty line (0 / 0).
///
/// Floating dtypes (f64, f32, f16, bf16). Axes in [-rank, rank), negative counts from the last;
/// a rank-0 tensor has no axis (UsageError). The result drops the axis, or keeps it with extent 1
/// when `keepdim` is true. Errors are UsageError naming the op, the operand and the fix.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// The reductions of reduce().
enum class AxisReduction : std::uint8_t {
  sum,  ///< the sum of the line
  max,  ///< the largest element (NaN-propagating)
  min,  ///< the smallest element (NaN-propagating)
  mean  ///< the sum divided by the line's length
};

/// The reduction's name as messages show it, e.g. "mean".
[[nodiscard]] const char* to_string(AxisReduction op) noexcept;

/// x reduced along `axis` by `op` into a new tensor of x's dtype and device: x's shape without
/// the axis, or with extent 1 there when `keepdim`.
[[nodiscard]] Tensor reduce(AxisReduction op, const Tensor& x, int axis, bool keepdim = false);
/// reduce into `out`, whose shape is x's without the axis or with extent 1 there (either), x's
/// dtype and device; out shares no memory with x.
void reduce_into(AxisReduction op, const Tensor& x, int axis, const Tensor& out);

/// @name Shorthands for reduce
///@{

/// reduce(AxisReduction::NAME, x, axis, keepdim) for the reduction NAME_along.
[[nodiscard]] inline Tensor sum_along(const Tensor& x, int axis, bool keepdim = false) {
  return reduce(AxisReduction::sum, x, axis, keepdim);
}
[[nodiscard]] inline Tensor max_along(const Tensor& x, int axis, bool keepdim = false) {
  return reduce(AxisReduction::max, x, axis, keepdim);
}
[[nodiscard]] inline Tensor min_along(const Tensor& x, int axis, bool keepdim = false) {
  return reduce(AxisReduction::min, x, axis, keepdim);
}
[[nodiscard]] inline Tensor mean_along(const Tensor& x, int axis, bool keepdim = false) {
  return reduce(AxisReduction::mean, x, axis, keepdim);
}
///@}

}  // namespace tenax::ops
