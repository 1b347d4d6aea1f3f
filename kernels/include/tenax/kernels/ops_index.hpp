/// Gather and scatter along an axis by a tensor of indices (torch.index_select, index_copy_,
/// index_add_).
/// @file
/// The index is a 1-D i64 or i32 tensor on the device of the data; every entry must lie in [0, n)
/// for the extent n of the indexed axis (no negative, wrapped indices): an entry outside is
/// refused with UsageError naming its position and value, before anything is written. On a CUDA
/// device that check is a kernel whose one-word answer is copied back, so gather and scatter wait
/// for the stream (the op itself is then enqueued, as the other ops are). Axes follow
/// ops_shape.hpp's rule ([-rank, rank), negative counts from the last).
///
/// gather and scatter copy elements bit for bit and take every dtype; scatter_add adds and takes
/// the floating dtypes (f16 and bf16 add in f32 and round each sum on store). Both scatters are
/// deterministic whatever the duplicates in the index: each column (one position of every other
/// axis) of the target is updated by one thread that walks the index in order, j = 0, 1, ...:
/// scatter keeps the value of the last j that names a position, scatter_add adds the values of
/// every j naming it, in increasing j, each addition rounded to the dtype. So the CPU and CUDA
/// backends give the same bits. The price is parallelism: the work is spread over the columns only
/// (a 1-D scatter runs on one thread).
///
/// Errors are UsageError as in ops_shape.hpp: undefined tensors, devices, dtypes, shapes, a bad
/// axis, an index that is not 1-D i64/i32, an index out of range, and outputs that share memory
/// with an input. Empty tensors and empty indices work (nothing is read or written).
#pragma once

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// out[.., j, ..] = x[.., index[j], ..] along `axis`: x's shape with the axis's extent replaced
/// by index.numel(). index: 1-D, i64 or i32, values in [0, n).
[[nodiscard]] Tensor gather(const Tensor& x, int axis, const Tensor& index);
/// gather into `out` (that shape, x's dtype and device; no memory shared with x or index).
void gather_into(const Tensor& x, int axis, const Tensor& index, const Tensor& out);

/// In place: target[.., index[j], ..] = src[.., j, ..] along `axis` for j = 0, 1, ... in order,
/// so with duplicates the last j wins. src has target's shape with the axis's extent
/// index.numel(), target's dtype and device; target shares no memory with src or index.
void scatter(const Tensor& target, int axis, const Tensor& index, const Tensor& src);
/// In place: target[.., index[j], ..] += src[.., j, ..] along `axis`, the additions of one target
/// element made in increasing j (duplicates accumulate). Floating dtypes only; otherwise as
/// scatter.
void scatter_add(const Tensor& target, int axis, const Tensor& index, const Tensor& src);

}  // namespace tenax::ops
