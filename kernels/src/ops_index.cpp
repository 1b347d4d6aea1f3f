// Checked front end of gather, scatter and scatter_add (ops_index.hpp): validate the operands,
// check every index entry on the data's device (a kernel that only says whether one is out of
// range; the slow search for the first bad entry runs on the host only when one is), then run the
// kernel of the tensors' device.
#include "tenax/kernels/ops_index.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "axis_split.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"

namespace tenax::ops {
namespace {

void check_index(std::string_view op, const Tensor& index, std::string_view data_name,
                 const Tensor& data) {
  detail::check_defined(op, "index", index);
  detail::check_same_device(op, "index", index, data_name, data);
  TENAX_EXPECTS(
      index.shape().rank() == 1 && (index.dtype() == DType::i64 || index.dtype() == DType::i32),
      UsageError,
      std::string(op) + ": index is " + index.describe() +
          " but must be a 1-D tensor of i64 or i32 positions",
      "pass the positions as a 1-D i64 (or i32) tensor, e.g. reshape({n}) a flat one");
}

// UsageError naming the first entry of index outside [0, bound), if any.
void check_index_range(std::string_view op, const Tensor& index, std::int64_t bound, int axis,
                       std::string_view data_name, const Tensor& data) {
  if (index.numel() == 0) return;
  const kernels::IndexCheckArgs args{index, bound};
  const bool bad = index.device().is_cpu() ? kernels::cpu::index_out_of_range(args)
                                           : kernels::cuda::index_out_of_range(args);
  if (!bad) return;
  const Tensor host = index.to(Device::cpu());
  std::int64_t position = 0;
  std::int64_t value = 0;
  for (std::int64_t j = 0; j < host.numel(); ++j) {
    value = host.dtype() == DType::i64 ? host.data_as<const std::int64_t>()[j]
                                       : host.data_as<const std::int32_t>()[j];
    if (value < 0 || value >= bound) {
      position = j;
      break;
    }
  }
  throw UsageError(
      std::string(op) + ": index[" + std::to_string(position) + "] = " + std::to_string(value) +
          " is outside [0, " + std::to_string(bound) + "), the positions of axis " +
          std::to_string(axis) + " of " + std::string(data_name) + ", " + data.describe(),
      "pass positions in [0, " + std::to_string(bound) + ") (negative positions are not wrapped)");
}

void scatter_impl(std::string_view op, bool add, const Tensor& target, int axis,
                  const Tensor& index, const Tensor& src) {
  detail::check_defined(op, "target", target);
  detail::check_defined(op, "src", src);
  const int a = detail::check_axis(op, "target", target, axis);
  check_index(op, index, "target", target);
  detail::check_same_device(op, "target", target, "src", src);
  detail::check_same_dtype(op, "target", target, "src", src);
  if (add) detail::check_floating(op, "target", target);
  const Shape expected = detail::with_extent(op, target.shape(), a, index.numel());
  TENAX_EXPECTS(src.shape() == expected, UsageError,
                std::string(op) + ": src is " + src.describe() + " but target, " +
                    target.describe() + ", with " + std::to_string(index.numel()) +
                    " index entries along axis " + std::to_string(a) + " needs src of shape " +
                    to_string(expected),
                "pass a src of shape " + to_string(expected) +
                    " (target's shape with the index's length along the axis)");
  detail::check_no_overlap(op, {"target", &target}, {{"src", &src}, {"index", &index}});
  const detail::AxisSplit split = detail::split_at(target.shape(), a);
  check_index_range(op, index, split.extent, a, "target", target);
  if (src.numel() == 0) return;
  const kernels::ScatterArgs args{src, index, target, add, split.outer, split.inner, split.extent};
  if (target.device().is_cpu()) {
    kernels::cpu::scatter(args);
  } else {
    kernels::cuda::scatter(args);
  }
}

}  // namespace

Tensor gather(const Tensor& x, int axis, const Tensor& index) {
  detail::check_defined("gather", "x", x);
  const int a = detail::check_axis("gather", "x", x, axis);
  check_index("gather", index, "x", x);
  Tensor out = Tensor::empty(detail::with_extent("gather", x.shape(), a, index.numel()), x.dtype(),
                             x.device());
  gather_into(x, axis, index, out);
  return out;
}

void gather_into(const Tensor& x, int axis, const Tensor& index, const Tensor& out) {
  detail::check_defined("gather", "x", x);
  const int a = detail::check_axis("gather", "x", x, axis);
  check_index("gather", index, "x", x);
  detail::check_out("gather", out, detail::with_extent("gather", x.shape(), a, index.numel()),
                    x.dtype(), x);
  detail::check_no_overlap("gather", {"out", &out}, {{"x", &x}, {"index", &index}});
  const detail::AxisSplit split = detail::split_at(x.shape(), a);
  check_index_range("gather", index, split.extent, a, "x", x);
  if (out.numel() == 0) return;
  const kernels::GatherArgs args{x, index, out, split.inner, split.extent};
  if (out.device().is_cpu()) {
    kernels::cpu::gather(args);
  } else {
    kernels::cuda::gather(args);
  }
}

void scatter(const Tensor& target, int axis, const Tensor& index, const Tensor& src) {
  scatter_impl("scatter", false, target, axis, index, src);
}

void scatter_add(const Tensor& target, int axis, const Tensor& index, const Tensor& src) {
  scatter_impl("scatter_add", true, target, axis, index, src);
}

}  // namespace tenax::ops
