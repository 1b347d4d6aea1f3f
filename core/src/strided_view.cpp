#include "tenax/core/strided_view.hpp"

#include <span>
#include <string>
#include <vector>

namespace tenax {
namespace {

std::string list(std::span<const std::int64_t> values) {
  std::string text = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    text += (k == 0 ? "" : ", ") + std::to_string(values[k]);
  }
  return text + "]";
}

std::string list(const std::vector<int>& values) {
  std::string text = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    text += (k == 0 ? "" : ", ") + std::to_string(values[k]);
  }
  return text + "]";
}

}  // namespace

StridedView::StridedView(const Tensor& tensor) : base_(tensor), shape_(tensor.shape()) {
  TENAX_EXPECTS(tensor.defined(), UsageError, "StridedView of an undefined tensor",
                "create the tensor (Tensor::empty) before viewing it");
  std::int64_t stride = 1;
  for (int d = shape_.rank() - 1; d >= 0; --d) {
    strides_[static_cast<std::size_t>(d)] = stride;
    stride *= shape_[d];
  }
}

std::vector<std::int64_t> StridedView::strides() const {
  return {strides_.begin(), strides_.begin() + shape_.rank()};
}

std::int64_t StridedView::stride(int axis) const {
  return strides_[static_cast<std::size_t>(check_axis("stride", axis))];
}

bool StridedView::is_contiguous() const noexcept {
  if (numel() == 0) return true;
  std::int64_t expected = 1;
  for (int d = shape_.rank() - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[static_cast<std::size_t>(d)] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

std::array<std::int64_t, 2> StridedView::element_range() const noexcept {
  if (numel() == 0) return {offset_, offset_};
  std::int64_t last = offset_;
  for (int d = 0; d < shape_.rank(); ++d) {
    last += (shape_[d] - 1) * strides_[static_cast<std::size_t>(d)];
  }
  return {offset_, last + 1};
}

void StridedView::check_defined(const char* what) const {
  TENAX_EXPECTS(defined(), UsageError,
                std::string("StridedView::") + what + " of an undefined view",
                "make the view from a tensor first: StridedView(tensor)");
}

int StridedView::check_axis(const char* what, int axis) const {
  check_defined(what);
  const int rank = shape_.rank();
  TENAX_EXPECTS(rank > 0, UsageError,
                std::string("StridedView::") + what + ": the view " + describe() +
                    " has rank 0, so it has no axis " + std::to_string(axis),
                "view a tensor of rank 1 or more (e.g. tensor.reshape({1}))");
  TENAX_EXPECTS(axis >= -rank && axis < rank, UsageError,
                std::string("StridedView::") + what + ": axis " + std::to_string(axis) +
                    " is out of range for the view " + describe() + " (rank " +
                    std::to_string(rank) + ")",
                "pass an axis in [" + std::to_string(-rank) + ", " + std::to_string(rank) +
                    "); a negative axis counts from the last (-1 is the last axis)");
  return axis < 0 ? axis + rank : axis;
}

StridedView StridedView::narrow(int axis, std::int64_t begin, std::int64_t end) const {
  const int a = check_axis("narrow", axis);
  const std::int64_t n = shape_[a];
  TENAX_EXPECTS(0 <= begin && begin <= end && end <= n, UsageError,
                "StridedView::narrow: [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") is not within axis " + std::to_string(a) + " of the view " + describe() +
                    ", whose extent is " + std::to_string(n),
                "pass 0 <= begin <= end <= " + std::to_string(n) +
                    " (bounds are not wrapped: a negative bound is refused)");
  StridedView view = *this;
  view.offset_ += begin * strides_[static_cast<std::size_t>(a)];
  std::vector<std::int64_t> extents(shape_.extents().begin(), shape_.extents().end());
  extents[static_cast<std::size_t>(a)] = end - begin;
  view.shape_ = Shape(std::span<const std::int64_t>(extents));
  return view;
}

StridedView StridedView::step(int axis, std::int64_t step) const {
  const int a = check_axis("step", axis);
  TENAX_EXPECTS(step >= 1, UsageError,
                "StridedView::step: step " + std::to_string(step) + " along axis " +
                    std::to_string(a) + " of the view " + describe() + " is not >= 1",
                "pass a step of 1 or more (a reversed view does not exist: copy with ops::roll "
                "or gather by index instead)");
  const std::int64_t n = shape_[a];
  StridedView view = *this;
  std::vector<std::int64_t> extents(shape_.extents().begin(), shape_.extents().end());
  // ceil(n / step) without overflow for any step >= 1.
  extents[static_cast<std::size_t>(a)] = n == 0 ? 0 : 1 + (n - 1) / step;
  view.shape_ = Shape(std::span<const std::int64_t>(extents));
  // A step beyond the extent keeps one position, whose stride never matters: keep it bounded.
  const std::int64_t kept = extents[static_cast<std::size_t>(a)];
  view.strides_[static_cast<std::size_t>(a)] = kept <= 1
                                                   ? strides_[static_cast<std::size_t>(a)]
                                                   : strides_[static_cast<std::size_t>(a)] * step;
  return view;
}

StridedView StridedView::select(int axis, std::int64_t index) const {
  const int a = check_axis("select", axis);
  const std::int64_t n = shape_[a];
  TENAX_EXPECTS(0 <= index && index < n, UsageError,
                "StridedView::select: index " + std::to_string(index) + " is not within axis " +
                    std::to_string(a) + " of the view " + describe() + ", whose extent is " +
                    std::to_string(n),
                n == 0 ? std::string("the axis is empty: there is nothing to select")
                       : "pass 0 <= index < " + std::to_string(n));
  StridedView view = *this;
  view.offset_ += index * strides_[static_cast<std::size_t>(a)];
  std::vector<std::int64_t> extents;
  int out = 0;
  for (int d = 0; d < shape_.rank(); ++d) {
    if (d == a) continue;
    extents.push_back(shape_[d]);
    view.strides_[static_cast<std::size_t>(out++)] = strides_[static_cast<std::size_t>(d)];
  }
  view.strides_[static_cast<std::size_t>(out)] = 0;
  view.shape_ = Shape(std::span<const std::int64_t>(extents));
  return view;
}

StridedView StridedView::permute(const std::vector<int>& dims) const {
  check_defined("permute");
  const int rank = shape_.rank();
  TENAX_EXPECTS(static_cast<int>(dims.size()) == rank, UsageError,
                "StridedView::permute: dims " + list(dims) + " has " + std::to_string(dims.size()) +
                    " entries but the view " + describe() + " has rank " + std::to_string(rank),
                "list each of the view's " + std::to_string(rank) + " axes exactly once");
  StridedView view = *this;
  std::vector<std::int64_t> extents;
  std::array<bool, Shape::kMaxRank> seen{};
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const int axis = check_axis("permute", dims[d]);
    TENAX_EXPECTS(!seen[static_cast<std::size_t>(axis)], UsageError,
                  "StridedView::permute: dims " + list(dims) + " names axis " +
                      std::to_string(axis) + " twice",
                  "list each of the view's " + std::to_string(rank) + " axes exactly once");
    seen[static_cast<std::size_t>(axis)] = true;
    extents.push_back(shape_[axis]);
    view.strides_[d] = strides_[static_cast<std::size_t>(axis)];
  }
  view.shape_ = Shape(std::span<const std::int64_t>(extents));
  return view;
}

StridedView StridedView::transpose(int axis0, int axis1) const {
  const int a0 = check_axis("transpose", axis0);
  const int a1 = check_axis("transpose", axis1);
  std::vector<int> dims(static_cast<std::size_t>(shape_.rank()));
  for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int>(d);
  std::swap(dims[static_cast<std::size_t>(a0)], dims[static_cast<std::size_t>(a1)]);
  return permute(dims);
}

Tensor StridedView::as_tensor() const {
  check_defined("as_tensor");
  TENAX_EXPECTS(is_contiguous(), UsageError,
                "StridedView::as_tensor: the view " + describe() +
                    " is not contiguous, so no tensor can share its storage",
                "copy it with ops::contiguous(view) (tenax/kernels/ops_view.hpp)");
  const Tensor flat = base_.reshape({base_.numel()});
  // An empty view may start past the base's end (narrowed to nothing at the far side).
  if (numel() == 0) return flat.slice(0, 0).reshape(shape_);
  // Every element of a view lies within its base tensor, so the flat base covers it.
  return flat.slice(offset_, offset_ + numel()).reshape(shape_);
}

std::string StridedView::describe() const {
  if (!defined()) return "undefined view";
  return std::string(to_string(dtype())) + to_string(shape_) + " strides " +
         list(std::span<const std::int64_t>(strides_.data(),
                                            static_cast<std::size_t>(shape_.rank()))) +
         " at " + std::to_string(offset_) + " of " + base_.describe();
}

}  // namespace tenax
