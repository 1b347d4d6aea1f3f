/// StridedView: the elements of a tensor seen along any axes, with a stride per axis, without a
/// copy.
/// @file
/// A Tensor is contiguous and row-major, and every kernel relies on that. A StridedView is what
/// a narrowed, strided, selected or transposed tensor is before it is copied: the tensor's
/// storage, a shape, a stride per axis (in elements) and the position of its first element. Views
/// are made from a tensor and from each other (narrow, step, select, permute, transpose) and never
/// allocate; the ops of `tenax/kernels/ops_view.hpp` read them (`ops::contiguous`) and write
/// through them (`ops::assign`, `ops::fill`) on any device.
///
/// The views made here never alias themselves: two different coordinates of one view always name
/// two different elements (every stride comes from a row-major layout, reordered or multiplied by
/// a step), so writing through a view is well defined. Two views may overlap each other; the ops
/// say what happens then.
///
/// Axes are in [-rank, rank), negative ones counting from the last (-1 is the last axis), as in
/// the tensor ops. Bad axes, bounds and steps are refused with UsageError naming the value, the
/// view and the fix.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax {

/// Elements of one tensor's storage at `offset() + sum_d i_d * strides()[d]` for every coordinate
/// (i_0, ..., i_{r-1}) of shape(). Copies are cheap and share the storage, like Tensor copies;
/// writes through any view are seen by every view and tensor of that storage.
class StridedView {
 public:
  StridedView() = default;  ///< an undefined view: defined() is false
  /// The whole of `tensor`, with its row-major strides (is_contiguous() is true). UsageError for
  /// an undefined tensor.
  explicit StridedView(const Tensor& tensor);

  /// Whether the view has storage.
  [[nodiscard]] bool defined() const noexcept { return base_.defined(); }
  /// The extents of the view.
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  /// Elements between neighbours along each axis, shape().rank() entries (>= 0).
  [[nodiscard]] std::vector<std::int64_t> strides() const;
  /// The stride of `axis` (negative counts from the last); UsageError for a bad axis.
  [[nodiscard]] std::int64_t stride(int axis) const;
  /// Position of the first element, in elements from the start of base()'s first element.
  [[nodiscard]] std::int64_t offset() const noexcept { return offset_; }
  /// The tensor the view was made from (its storage, dtype and device).
  [[nodiscard]] const Tensor& base() const noexcept { return base_; }
  /// The element type.
  [[nodiscard]] DType dtype() const noexcept { return base_.dtype(); }
  /// Where the elements live.
  [[nodiscard]] Device device() const noexcept { return base_.device(); }
  /// Number of elements, shape().numel().
  [[nodiscard]] std::int64_t numel() const noexcept { return shape_.numel(); }
  /// Whether the elements are contiguous and row-major in shape() (axes of extent 1 may have any
  /// stride), so that as_tensor() needs no copy. An empty view is contiguous.
  [[nodiscard]] bool is_contiguous() const noexcept;
  /// The first and one past the last element of base()'s storage the view can touch, in elements
  /// from base()'s first element: [first, last). Equal for an empty view. Overlap tests use it.
  [[nodiscard]] std::array<std::int64_t, 2> element_range() const noexcept;

  /// Positions [begin, end) along `axis` (0 <= begin <= end <= extent; no wrapped bounds).
  [[nodiscard]] StridedView narrow(int axis, std::int64_t begin, std::int64_t end) const;
  /// Every `step`-th position along `axis` from the first (a Python slice with a step): extent
  /// ceil(n / step). step >= 1; a step larger than the extent keeps the first position only.
  [[nodiscard]] StridedView step(int axis, std::int64_t step) const;
  /// The positions at `index` along `axis`, that axis removed (rank - 1; a rank-0 view of one
  /// element when the view had rank 1). 0 <= index < extent.
  [[nodiscard]] StridedView select(int axis, std::int64_t index) const;
  /// The axes reordered: axis d of the result is axis dims[d] of this view (torch.permute);
  /// `dims` lists every axis once.
  [[nodiscard]] StridedView permute(const std::vector<int>& dims) const;
  /// Axes axis0 and axis1 exchanged.
  [[nodiscard]] StridedView transpose(int axis0, int axis1) const;

  /// The same elements as a Tensor sharing the storage, when is_contiguous(); UsageError
  /// otherwise, naming ops::contiguous (a copy) as the fix.
  [[nodiscard]] Tensor as_tensor() const;

  /// `"f64[3, 4] strides [1, 3] at 2 of f64[4, 3] on cpu"`, or `"undefined view"`, for messages.
  [[nodiscard]] std::string describe() const;

 private:
  [[nodiscard]] int check_axis(const char* what, int axis) const;
  void check_defined(const char* what) const;

  Tensor base_;
  Shape shape_;
  std::array<std::int64_t, Shape::kMaxRank> strides_{};
  std::int64_t offset_ = 0;
};

}  // namespace tenax
