// The copy between two strided views of one shape, dtype and device that ops_view.cpp and
// ops_shape.cpp (permute) run. Private to kernels/src.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/strided_view.hpp"

namespace tenax::ops::detail {

// dst's elements = src's, coordinate for coordinate. The caller has checked shapes, dtypes and
// devices and that the two do not overlap. Axes of extent 1 are dropped and neighbouring axes
// that are contiguous in both views merged, so a row-major copy is one long axis.
void copy_strided(const StridedView& src, const StridedView& dst);
// The same with src given as storage, the offset of its first element and a stride per axis of
// dst (0 strides read one element for many coordinates: a fill).
void copy_strided(const Tensor& src, std::int64_t src_offset,
                  const std::vector<std::int64_t>& src_strides, const StridedView& dst);

}  // namespace tenax::ops::detail
