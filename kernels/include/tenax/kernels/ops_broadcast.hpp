/// Broadcasting: binary element-wise ops on operands of different shapes, and its backward,
/// sum_to.
/// @file
/// Shapes broadcast by NumPy's rules: aligned from the right (the shorter one padded with leading
/// 1s), each pair of extents must be equal or one of them 1; the result takes the larger extent
/// (an extent 0 pairs with 0 or 1 and gives 0). Rank is at most Shape::kMaxRank (8).
///
/// Operands are checked like every tenax::ops call (UsageError naming the op, the operands and the
/// fix): defined, one device, one floating dtype, shapes that broadcast. An output may be one of
/// the inputs itself (same storage, same shape), but must not otherwise overlap an input. f16 and
/// bf16 are computed in f32 and rounded on store. On a CUDA device the ops are enqueued on the
/// device context's stream; a build without CUDA throws NotCompiledError for CUDA tensors.
#pragma once

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::ops {

/// The shape a and b broadcast to. UsageError naming both shapes when they do not broadcast.
[[nodiscard]] Shape broadcast_shape(const Shape& a, const Shape& b);

/// op(a, b) element by element, a and b broadcast to broadcast_shape(a.shape(), b.shape()), in a
/// new tensor of that shape on a's device and dtype. Every output element is the expression of
/// ops::binary on the two elements it reads, so equal shapes give exactly the bits of
/// ops::binary(op, a, b).
[[nodiscard]] Tensor broadcast_binary(BinaryOp op, const Tensor& a, const Tensor& b);
/// broadcast_binary into a caller-provided `out`, which must have the broadcast shape and the
/// operands' dtype and device (UsageError otherwise), and may be a or b itself. An empty `out`
/// is a no-op.
void broadcast_binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

/// The backward of broadcasting: x summed over the dimensions that broadcasting `shape` to
/// x.shape() would expand, giving a tensor of `shape` (e.g. the bias gradient: x [batch, out]
/// summed to [out] or [1, out]). `shape` must broadcast to x.shape() exactly: its extents, aligned
/// from the right, equal x's or are 1, and its rank is at most x's (UsageError otherwise).
/// Each output element adds its inputs, widened to double, one after the other in row-major order
/// of x into a double starting at 0, and is rounded once when stored (f16 and bf16 directly from
/// the double, not through f32). The bits therefore depend on neither the thread count nor the
/// backend. An output whose inputs are all empty (an extent 0 in x) is 0.
[[nodiscard]] Tensor sum_to(const Tensor& x, const Shape& shape);
/// sum_to into a caller-provided out of the target shape, x's dtype and x's device; `out` may
/// be x itself (same storage and shape) but must not otherwise overlap x.
void sum_to_into(const Tensor& x, const Tensor& out);

}  // namespace tenax::ops
