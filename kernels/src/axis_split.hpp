// A contiguous tensor seen around one axis as [outer, extent, inner], and the checks its ops
// share. Private to kernels/src.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/checks.hpp"

namespace tenax::ops::detail {

// The extents before `axis` multiplied (outer), its own (extent), those after it (inner).
struct AxisSplit {
  std::int64_t outer = 1;
  std::int64_t extent = 1;
  std::int64_t inner = 1;
};

// The split of `shape` around axis (0 <= axis < rank). Products of extents of a Shape fit int64.
inline AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit split;
  for (int d = 0; d < axis; ++d) split.outer *= shape[d];
  split.extent = shape[axis];
  for (int d = axis + 1; d < shape.rank(); ++d) split.inner *= shape[d];
  return split;
}

// `shape` with the extent of `axis` replaced; UsageError (from Shape) naming `op` when the
// element count would overflow int64.
Shape with_extent(std::string_view op, const Shape& shape, int axis, std::int64_t extent);

// out is x itself (same storage and shape: element-wise ops read an element before writing it,
// on one thread) or shares no memory with it.
void check_same_or_disjoint(std::string_view op, std::string_view out_name, const Tensor& out,
                            std::string_view in_name, const Tensor& in);

// `out` has `shape`, `dtype` and the device of `like` (UsageError naming what differs).
void check_out(std::string_view op, const Tensor& out, const Shape& shape, DType dtype,
               const Tensor& like);

}  // namespace tenax::ops::detail
