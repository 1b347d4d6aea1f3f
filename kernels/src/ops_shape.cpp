// Checked front end of the data-movement ops (ops_shape.hpp): validate, compute the result's
// shape (its element count checked before anything is allocated), then copy with the kernels of
// the tensors' device. roll and concat are slab copies along the axis; pad has a body of its own
// (tensor_ops_bodies.hpp); narrow and permute are strided copies of a view.
#include "tenax/kernels/ops_shape.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "axis_split.hpp"
#include "strided_copy.hpp"
#include "tenax/core/checked_size.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_view.hpp"

namespace tenax::ops {
namespace {

void run_slab_copy(const kernels::SlabCopyArgs& args) {
  if (args.outer == 0 || args.inner == 0 || args.count == 0) return;
  if (args.dst.device().is_cpu()) {
    kernels::cpu::slab_copy(args);
  } else {
    kernels::cuda::slab_copy(args);
  }
}

// x copied into positions [dst_begin, dst_begin + count) of out along the axis, from position
// src_begin of x.
void copy_slab(const Tensor& x, const Tensor& out, int axis, std::int64_t count,
               std::int64_t src_begin, std::int64_t dst_begin) {
  const detail::AxisSplit in = detail::split_at(x.shape(), axis);
  run_slab_copy(
      {x, out, in.outer, in.inner, count, in.extent, src_begin, out.shape()[axis], dst_begin});
}

void check_no_overlap_with(std::string_view op, const Tensor& out, const Tensor& x) {
  detail::check_no_overlap(op, {"out", &out}, {{"x", &x}});
}

// The result shape of pad: n + before + after along the axis, counted without overflow.
Shape padded_shape(const Tensor& x, int axis, std::int64_t before, std::int64_t after) {
  TENAX_EXPECTS(before >= 0 && after >= 0, UsageError,
                "pad: before = " + std::to_string(before) +
                    " and after = " + std::to_string(after) + " must both be >= 0",
                "pass the number of positions to add on each side; to remove positions use "
                "ops::narrow");
  const std::string what =
      "pad: the padded extent of axis " + std::to_string(axis) + " of " + x.describe();
  const std::int64_t extent =
      size_sum(what, size_sum(what, x.shape()[axis], before, "pad by fewer positions"), after,
               "pad by fewer positions");
  return detail::with_extent("pad", x.shape(), axis, extent);
}

// The constant of pad as x's stored word: ops::fill's rounding and range checks.
std::uint64_t constant_bits(DType dtype, double value) {
  const Tensor one = Tensor::empty({1}, dtype);
  fill(one, value);
  std::uint64_t bits = 0;
  std::memcpy(&bits, one.data(), size_of(dtype));
  return bits;
}

// The shape of concat's result: xs[0]'s with the sum of the extents along axis (axis in range).
Shape concat_shape(const std::vector<Tensor>& xs, int axis) {
  const Tensor& first = xs[0];
  std::int64_t total = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const std::string name = "xs[" + std::to_string(k) + "]";
    detail::check_defined("concat", name, xs[k]);
    detail::check_same_device("concat", "xs[0]", first, name, xs[k]);
    detail::check_same_dtype("concat", "xs[0]", first, name, xs[k]);
    TENAX_EXPECTS(xs[k].shape().rank() == first.shape().rank(), UsageError,
                  "concat: " + name + ", " + xs[k].describe() + ", has rank " +
                      std::to_string(xs[k].shape().rank()) + " but xs[0], " + first.describe() +
                      ", has rank " + std::to_string(first.shape().rank()),
                  "reshape the inputs to one rank before joining them");
    for (int d = 0; d < first.shape().rank(); ++d) {
      TENAX_EXPECTS(d == axis || xs[k].shape()[d] == first.shape()[d], UsageError,
                    "concat: " + name + ", " + xs[k].describe() + ", differs from xs[0], " +
                        first.describe() + ", in axis " + std::to_string(d) +
                        ", which is not the joined axis " + std::to_string(axis),
                    "make every extent but the joined axis's equal (or join along axis " +
                        std::to_string(d) + ")");
    }
    total = size_sum("concat: the joined extent of axis " + std::to_string(axis), total,
                     xs[k].shape()[axis], "join fewer or smaller tensors");
  }
  return detail::with_extent("concat", first.shape(), axis, total);
}

void check_concat_inputs(const std::vector<Tensor>& xs) {
  TENAX_EXPECTS(!xs.empty(), UsageError, "concat: xs is empty, so there is nothing to join",
                "pass at least one tensor");
}

}  // namespace

const char* to_string(PadMode mode) noexcept {
  switch (mode) {
    case PadMode::constant:
      return "constant";
    case PadMode::periodic:
      return "periodic";
    case PadMode::reflect:
      return "reflect";
  }
  return "unknown PadMode";
}

Tensor roll(const Tensor& x, std::int64_t shift, int axis) {
  detail::check_defined("roll", "x", x);
  static_cast<void>(detail::check_axis("roll", "x", x, axis));
  Tensor out = Tensor::empty_like(x);
  roll_into(x, shift, axis, out);
  return out;
}

void roll_into(const Tensor& x, std::int64_t shift, int axis, const Tensor& out) {
  detail::check_defined("roll", "x", x);
  const int a = detail::check_axis("roll", "x", x, axis);
  detail::check_out("roll", out, x.shape(), x.dtype(), x);
  check_no_overlap_with("roll", out, x);
  if (out.numel() == 0) return;
  const std::int64_t n = x.shape()[a];
  std::int64_t s = shift % n;  // in (-n, n): no overflow for any shift
  if (s < 0) s += n;
  // out[j] = x[(j - s) mod n]: out[s, n) is x[0, n - s), out[0, s) is x[n - s, n).
  copy_slab(x, out, a, n - s, 0, s);
  if (s > 0) copy_slab(x, out, a, s, n - s, 0);
}

Tensor pad(const Tensor& x, int axis, std::int64_t before, std::int64_t after, PadMode mode,
           double value) {
  detail::check_defined("pad", "x", x);
  const int a = detail::check_axis("pad", "x", x, axis);
  Tensor out = Tensor::empty(padded_shape(x, a, before, after), x.dtype(), x.device());
  pad_into(x, axis, before, after, mode, value, out);
  return out;
}

void pad_into(const Tensor& x, int axis, std::int64_t before, std::int64_t after, PadMode mode,
              double value, const Tensor& out) {
  detail::check_defined("pad", "x", x);
  const int a = detail::check_axis("pad", "x", x, axis);
  const Shape shape = padded_shape(x, a, before, after);
  detail::check_out("pad", out, shape, x.dtype(), x);
  check_no_overlap_with("pad", out, x);
  TENAX_EXPECTS(mode == PadMode::constant || mode == PadMode::periodic || mode == PadMode::reflect,
                UsageError, "pad: unknown PadMode " + std::to_string(static_cast<int>(mode)),
                "pass one of the ops::PadMode enumerators");
  const detail::AxisSplit in = detail::split_at(x.shape(), a);
  TENAX_EXPECTS(mode == PadMode::constant || in.extent > 0 || before + after == 0, UsageError,
                std::string("pad: ") + to_string(mode) + " padding reads x, " + x.describe() +
                    ", along axis " + std::to_string(a) + ", which has no elements",
                "pad an empty axis with PadMode::constant");
  const std::uint64_t bits = mode == PadMode::constant ? constant_bits(x.dtype(), value) : 0;
  if (out.numel() == 0) return;
  const kernels::PadArgs args{
      x, out, static_cast<kernels::PadKind>(mode), bits, in.inner, in.extent, before, shape[a]};
  if (out.device().is_cpu()) {
    kernels::cpu::pad(args);
  } else {
    kernels::cuda::pad(args);
  }
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  check_concat_inputs(xs);
  detail::check_defined("concat", "xs[0]", xs[0]);
  const int a = detail::check_axis("concat", "xs[0]", xs[0], axis);
  Tensor out = Tensor::empty(concat_shape(xs, a), xs[0].dtype(), xs[0].device());
  concat_into(xs, axis, out);
  return out;
}

void concat_into(const std::vector<Tensor>& xs, int axis, const Tensor& out) {
  check_concat_inputs(xs);
  detail::check_defined("concat", "xs[0]", xs[0]);
  const int a = detail::check_axis("concat", "xs[0]", xs[0], axis);
  detail::check_out("concat", out, concat_shape(xs, a), xs[0].dtype(), xs[0]);
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const std::string name = "xs[" + std::to_string(k) + "]";
    detail::check_no_overlap("concat", {"out", &out}, {{name, &xs[k]}});
  }
  std::int64_t at = 0;
  for (const Tensor& x : xs) {
    const std::int64_t n = x.shape()[a];
    copy_slab(x, out, a, n, 0, at);
    at += n;
  }
}

// narrow and permute are views of x (their bounds, axes and permutation checked there, once)
// copied out.
Tensor narrow(const Tensor& x, int axis, std::int64_t begin, std::int64_t end) {
  detail::check_defined("narrow", "x", x);
  static_cast<void>(detail::check_axis("narrow", "x", x, axis));
  return contiguous(StridedView(x).narrow(axis, begin, end));
}

void narrow_into(const Tensor& x, int axis, std::int64_t begin, std::int64_t end,
                 const Tensor& out) {
  detail::check_defined("narrow", "x", x);
  static_cast<void>(detail::check_axis("narrow", "x", x, axis));
  const StridedView part = StridedView(x).narrow(axis, begin, end);
  detail::check_out("narrow", out, part.shape(), x.dtype(), x);
  check_no_overlap_with("narrow", out, x);
  if (out.numel() > 0) detail::copy_strided(part, StridedView(out));
}

Tensor permute(const Tensor& x, const std::vector<int>& dims) {
  detail::check_defined("permute", "x", x);
  return contiguous(StridedView(x).permute(dims));
}

void permute_into(const Tensor& x, const std::vector<int>& dims, const Tensor& out) {
  detail::check_defined("permute", "x", x);
  const StridedView permuted = StridedView(x).permute(dims);
  detail::check_out("permute", out, permuted.shape(), x.dtype(), x);
  check_no_overlap_with("permute", out, x);
  if (out.numel() > 0) detail::copy_strided(permuted, StridedView(out));
}

Tensor transpose(const Tensor& x, int axis0, int axis1) {
  detail::check_defined("transpose", "x", x);
  const int a0 = detail::check_axis("transpose", "x", x, axis0);
  const int a1 = detail::check_axis("transpose", "x", x, axis1);
  std::vector<int> dims(static_cast<std::size_t>(x.shape().rank()));
  for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int>(d);
  std::swap(dims[static_cast<std::size_t>(a0)], dims[static_cast<std::size_t>(a1)]);
  return permute(x, dims);
}

}  // namespace tenax::ops
