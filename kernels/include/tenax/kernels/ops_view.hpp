/// Reading and writing strided views (tenax/core/strided_view.hpp): a column, a corner block, every
/// other row, a transposed matrix, copied out or written in place, on any device.
/// @file
/// Every dtype works; elements are copied bit for bit, so the CPU and CUDA backends give the same
/// bits. On a CUDA device the ops are enqueued on the device context's stream; a build without
/// CUDA throws NotCompiledError for CUDA views. A view without elements makes the ops do nothing.
///
/// Errors (UsageError naming the op, the operands and the fix): undefined views, views on
/// different devices or of different dtypes or shapes.
#pragma once

#include "tenax/core/strided_view.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// A new contiguous tensor of the view's shape holding its elements in row-major order (the copy
/// that turns a narrowed, stepped or transposed view into a tensor every op takes), from the
/// current resource of the view's device.
[[nodiscard]] Tensor contiguous(const StridedView& view);

/// Writes src's elements through dst, coordinate for coordinate: dst and src have one shape, one
/// dtype and one device. They may share storage and overlap (a row written from the row above,
/// a block shifted within its field): the result is then as if src had been copied out before
/// any element of dst was written (the op stages src through a temporary, allocated only when
/// the element ranges of the two intersect).
void assign(const StridedView& dst, const StridedView& src);
/// assign(dst, StridedView(src)): a contiguous tensor written into a view.
void assign(const StridedView& dst, const Tensor& src);

/// Sets every element of the view to `value`, rounded to its dtype as ops::fill(Tensor, double)
/// rounds (an integer dtype needs a whole number in range): a Dirichlet boundary column, a
/// frame around a block.
void fill(const StridedView& dst, double value);

}  // namespace tenax::ops
