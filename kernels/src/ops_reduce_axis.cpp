// Checked front end of the reductions along an axis (ops_reduce_axis.hpp).
#include "tenax/kernels/ops_reduce_axis.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "axis_split.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"

namespace tenax::ops {
namespace {

std::string reduce_name(AxisReduction op) { return std::string("reduce(") + to_string(op) + ")"; }

// x's shape without `axis`, or with extent 1 there.
Shape reduced_shape(const Shape& x, int axis, bool keepdim) {
  std::vector<std::int64_t> extents;
  for (int d = 0; d < x.rank(); ++d) {
    if (d != axis) {
      extents.push_back(x[d]);
    } else if (keepdim) {
      extents.push_back(1);
    }
  }
  return Shape(std::span<const std::int64_t>(extents));
}

int check_reduce(AxisReduction op, const Tensor& x, int axis) {
  const std::string name = reduce_name(op);
  TENAX_EXPECTS(op <= AxisReduction::mean, UsageError,
                "reduce: unknown AxisReduction " + std::to_string(static_cast<int>(op)),
                "pass one of the ops::AxisReduction enumerators");
  detail::check_defined(name, "x", x);
  detail::check_floating(name, "x", x);
  const int a = detail::check_axis(name, "x", x, axis);
  const bool needs_elements = op == AxisReduction::max || op == AxisReduction::min;
  // An empty line is refused only where there is an output to write.
  TENAX_EXPECTS(
      !needs_elements || x.shape()[a] > 0 || reduced_shape(x.shape(), a, false).numel() == 0,
      UsageError,
      name + ": axis " + std::to_string(a) + " of x, " + x.describe() + ", is empty, and a " +
          to_string(op) + " of no elements has no value",
      "reduce along a non-empty axis, or use sum (0 for an empty line)");
  return a;
}

}  // namespace

const char* to_string(AxisReduction op) noexcept {
  switch (op) {
    case AxisReduction::sum:
      return "sum";
    case AxisReduction::max:
      return "max";
    case AxisReduction::min:
      return "min";
    case AxisReduction::mean:
      return "mean";
  }
  return "unknown AxisReduction";
}

Tensor reduce(AxisReduction op, const Tensor& x, int axis, bool keepdim) {
  const int a = check_reduce(op, x, axis);
  Tensor out = Tensor::empty(reduced_shape(x.shape(), a, keepdim), x.dtype(), x.device());
  reduce_into(op, x, axis, out);
  return out;
}

void reduce_into(AxisReduction op, const Tensor& x, int axis, const Tensor& out) {
  const std::string name = reduce_name(op);
  const int a = check_reduce(op, x, axis);
  const Shape dropped = reduced_shape(x.shape(), a, false);
  const Shape kept = reduced_shape(x.shape(), a, true);
  detail::check_defined(name, "out", out);
  detail::check_out(name, out, out.shape() == kept ? kept : dropped, x.dtype(), x);
  detail::check_no_overlap(name, {"out", &out}, {{"x", &x}});
  if (out.numel() == 0) return;
  const detail::AxisSplit split = detail::split_at(x.shape(), a);
  const kernels::ReduceAxisArgs args{op, x, out, split.inner, split.extent};
  if (out.device().is_cpu()) {
    kernels::cpu::reduce_axis(args);
  } else {
    kernels::cuda::reduce_axis(args);
  }
}

}  // namespace tenax::ops
