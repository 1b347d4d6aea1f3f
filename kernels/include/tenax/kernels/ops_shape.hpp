/// Data-movement ops along an axis: roll, pad, concat, narrow, permute and transpose.
/// @file
/// Each op makes a new contiguous tensor (a copy; Tensor is contiguous, and the view of a
/// narrowed or transposed tensor without a copy is a StridedView, ops_view.hpp); its `_into`
/// variant writes into a caller-provided `out` of the result's shape, x's dtype and x's device.
/// Every dtype works (f64, f32, f16, bf16, i64, i32, u8): elements are copied bit for bit, so the
/// CPU and CUDA backends give the same bits. An op whose result has no elements does nothing and
/// does not fail.
///
/// Axes: an axis is in [-rank, rank); a negative axis counts from the last, Python-style (-1 is the
/// last axis). Anything else, and every axis of a rank-0 tensor, is refused with UsageError.
///
/// Errors (UsageError naming the op, the operands and the fix): undefined tensors, operands on
/// different devices or of different dtypes, a bad axis, extents that do not fit, a result whose
/// element count would overflow (checked before anything is allocated), and an `out` that shares
/// memory with an input (none of these ops can run in place). On a CUDA device the ops are
/// enqueued on the device context's stream; a build without CUDA throws NotCompiledError for CUDA
/// tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// What pad() puts outside the input along the padded axis. With n the input's extent, an output
/// position at input coordinate k (k < 0 before the input, k >= n after it) reads:
enum class PadMode : std::uint8_t {
  constant,  ///< the value passed to pad()
  periodic,  ///< x[k mod n] (k mod n in [0, n)): a periodic grid boundary, any pad width
  /// x[k'] with the mirror through the boundary between cells, k' = -1 - k below 0 and
  /// 2n - 1 - k above n - 1 (so -1 reads 0, -2 reads 1, n reads n - 1): a Neumann (zero-flux)
  /// grid boundary, numpy's "symmetric" mode. Repeated with period 2n for pads wider than n.
  reflect
};

/// The mode's name as messages show it ("constant", "periodic", "reflect").
[[nodiscard]] const char* to_string(PadMode mode) noexcept;

/// x rolled along `axis` by `shift` positions with wrap-around, like torch.roll: out[.., j, ..] =
/// x[.., (j - shift) mod n, ..] where n is the axis's extent. Any shift works, negative or larger
/// than n (only shift mod n matters); an axis of extent 0 gives an empty result.
[[nodiscard]] Tensor roll(const Tensor& x, std::int64_t shift, int axis);
/// roll into `out` (x's shape, dtype and device; no memory shared with x).
void roll_into(const Tensor& x, std::int64_t shift, int axis, const Tensor& out);

/// x padded along `axis` with `before` positions in front and `after` behind (both >= 0; to cut,
/// use narrow): the result's extent there is n + before + after. `value` is used by
/// PadMode::constant only; it is rounded to x's dtype as ops::fill rounds (for an integer dtype it
/// must be a whole number in range). periodic and reflect read x itself and need n >= 1 when
/// anything is padded. UsageError also when n + before + after or the result's element count
/// overflows int64.
[[nodiscard]] Tensor pad(const Tensor& x, int axis, std::int64_t before, std::int64_t after,
                         PadMode mode = PadMode::constant, double value = 0.0);
/// pad into `out`, whose shape is x's with the axis's extent n + before + after.
void pad_into(const Tensor& x, int axis, std::int64_t before, std::int64_t after, PadMode mode,
              double value, const Tensor& out);

/// The tensors of `xs` joined along `axis`, in order: at least one tensor, all of one rank,
/// dtype and device, with equal extents except along `axis` (tensors empty along it contribute
/// nothing). The axis is taken against the rank of xs[0].
[[nodiscard]] Tensor concat(const std::vector<Tensor>& xs, int axis);
/// concat into `out`, whose extent along the axis is the sum of the inputs'.
void concat_into(const std::vector<Tensor>& xs, int axis, const Tensor& out);

/// Positions [begin, end) of x along `axis`, copied: 0 <= begin <= end <= n (no negative or
/// wrapped bounds). begin == end gives an empty result.
[[nodiscard]] Tensor narrow(const Tensor& x, int axis, std::int64_t begin, std::int64_t end);
/// narrow into `out`, whose shape is x's with extent end - begin along the axis.
void narrow_into(const Tensor& x, int axis, std::int64_t begin, std::int64_t end,
                 const Tensor& out);

/// x with its axes reordered, copied: axis d of the result is axis dims[d] of x (torch.permute),
/// so out[i_0, ..., i_{r-1}] = x at coordinate i_d along axis dims[d]. `dims` holds every axis of x
/// exactly once; negative entries count from the last axis.
[[nodiscard]] Tensor permute(const Tensor& x, const std::vector<int>& dims);
/// permute into `out`, whose shape is x's extents in the order of `dims`.
void permute_into(const Tensor& x, const std::vector<int>& dims, const Tensor& out);
/// x with axes axis0 and axis1 swapped, copied (permute with those two entries exchanged).
[[nodiscard]] Tensor transpose(const Tensor& x, int axis0, int axis1);

}  // namespace tenax::ops
