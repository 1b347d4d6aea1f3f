// Checked front end of the strided-view ops (ops_view.hpp): validate, stage an overlapping source,
// then run the strided copy of the views' device (tensor_ops_bodies.hpp's StridedCopyBody).
#include "tenax/kernels/ops_view.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strided_copy.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::ops {
namespace detail {

void copy_strided(const StridedView& src, const StridedView& dst) {
  copy_strided(src.base(), src.offset(), src.strides(), dst);
}

void copy_strided(const Tensor& src, std::int64_t src_offset,
                  const std::vector<std::int64_t>& src_strides, const StridedView& dst) {
  const int rank = dst.shape().rank();
  kernels::StridedLayout layout;
  // Innermost first: drop extent-1 axes, merge an axis into the one inside it when both views
  // step over the inner axis's whole extent with it.
  std::vector<std::int64_t> extent;
  std::vector<std::int64_t> from;
  std::vector<std::int64_t> to;
  for (int d = rank - 1; d >= 0; --d) {
    const std::int64_t n = dst.shape()[d];
    if (n == 1) continue;
    const std::int64_t s = src_strides[static_cast<std::size_t>(d)];
    const std::int64_t t = dst.stride(d);
    if (!extent.empty() && s == from.back() * extent.back() && t == to.back() * extent.back()) {
      extent.back() *= n;
      continue;
    }
    extent.push_back(n);
    from.push_back(s);
    to.push_back(t);
  }
  if (extent.empty()) {
    extent.push_back(1);
    from.push_back(0);
    to.push_back(0);
  }
  layout.rank = static_cast<int>(extent.size());
  for (int d = 0; d < layout.rank; ++d) {
    const auto k = static_cast<std::size_t>(layout.rank - 1 - d);
    layout.extent[d] = extent[k];
    layout.src_stride[d] = from[k];
    layout.dst_stride[d] = to[k];
  }
  const kernels::StridedCopyArgs args{src,          src_offset, dst.base(),
                                      dst.offset(), layout,     dst.numel()};
  if (dst.device().is_cpu()) {
    kernels::cpu::strided_copy(args);
  } else {
    kernels::cuda::strided_copy(args);
  }
}

}  // namespace detail

namespace {

void check_defined(std::string_view op, std::string_view name, const StridedView& view) {
  TENAX_EXPECTS(view.defined(), UsageError,
                std::string(op) + ": " + std::string(name) + " is an undefined view",
                "make the view from a tensor first: StridedView(tensor)");
}

// Whether two views on one device can touch a common element of one storage.
bool overlap(const StridedView& a, const StridedView& b) {
  if (a.numel() == 0 || b.numel() == 0 || a.base().buffer() != b.base().buffer()) return false;
  const auto ra = a.element_range();
  const auto rb = b.element_range();
  const std::int64_t a0 = a.base().offset() + ra[0];
  const std::int64_t b0 = b.base().offset() + rb[0];
  return a0 < b0 + (rb[1] - rb[0]) && b0 < a0 + (ra[1] - ra[0]);
}

}  // namespace

Tensor contiguous(const StridedView& view) {
  check_defined("contiguous", "view", view);
  Tensor out = Tensor::empty(view.shape(), view.dtype(), view.device());
  if (out.numel() > 0) detail::copy_strided(view, StridedView(out));
  return out;
}

void assign(const StridedView& dst, const StridedView& src) {
  check_defined("assign", "dst", dst);
  check_defined("assign", "src", src);
  const std::string both = "dst, " + dst.describe() + ", and src, " + src.describe() + ",";
  TENAX_EXPECTS(dst.device() == src.device(), UsageError,
                "assign: " + both + " are on different devices",
                "move src to dst's device first (src.to(device)), then view it");
  TENAX_EXPECTS(dst.dtype() == src.dtype(), UsageError, "assign: " + both + " differ in dtype",
                "cast src to dst's dtype first (ops::cast), then view it");
  TENAX_EXPECTS(dst.shape() == src.shape(), UsageError, "assign: " + both + " differ in shape",
                "narrow, step, select or permute the views until their shapes agree");
  if (dst.numel() == 0) return;
  if (overlap(dst, src)) {
    const Tensor staged = contiguous(src);
    detail::copy_strided(StridedView(staged), dst);
    return;
  }
  detail::copy_strided(src, dst);
}

void assign(const StridedView& dst, const Tensor& src) {
  TENAX_EXPECTS(src.defined(), UsageError, "assign: src is an undefined tensor",
                "create the tensor before assigning it");
  assign(dst, StridedView(src));
}

void fill(const StridedView& dst, double value) {
  check_defined("fill", "dst", dst);
  const Tensor one = Tensor::empty({1}, dst.dtype(), dst.device());
  fill(one, value);  // its rounding and range checks
  if (dst.numel() == 0) return;
  // One element read for every coordinate: every stride of the source is 0.
  detail::copy_strided(one, 0, std::vector<std::int64_t>(dst.strides().size(), 0), dst);
}

}  // namespace tenax::ops
