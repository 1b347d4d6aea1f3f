// Checked front end of the broadcasting ops: validate, reduce the shapes to a layout of merged
// dimensions (broadcast_bodies.hpp), then run the kernel of the tensors' device.
#include "tenax/kernels/ops_broadcast.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/broadcast_kernels.hpp"

namespace tenax::ops {
namespace {

// Extent of `shape` at axis `from_right` counted from the last axis (0 = last); 1 past the rank.
std::int64_t aligned_extent(const Shape& shape, int from_right) {
  return from_right < shape.rank() ? shape[shape.rank() - 1 - from_right] : 1;
}

// Row-major strides of a contiguous tensor of `shape`, aligned to the right of `rank` axes (the
// missing leading axes get stride 0).
std::vector<std::int64_t> aligned_strides(const Shape& shape, int rank) {
  std::vector<std::int64_t> strides(static_cast<std::size_t>(rank), 0);
  std::int64_t stride = 1;
  for (int k = 0; k < shape.rank(); ++k) {
    const int axis = shape.rank() - 1 - k;
    strides[static_cast<std::size_t>(rank - 1 - k)] = shape[axis] == 1 ? 0 : stride;
    stride *= shape[axis];
  }
  return strides;
}

// The broadcast shape, or the axis (counted from the right) where a and b do not broadcast.
bool try_broadcast(const Shape& a, const Shape& b, Shape& result, int& bad_from_right) {
  const int rank = a.rank() > b.rank() ? a.rank() : b.rank();
  std::vector<std::int64_t> extents(static_cast<std::size_t>(rank));
  for (int k = 0; k < rank; ++k) {
    const std::int64_t ea = aligned_extent(a, k);
    const std::int64_t eb = aligned_extent(b, k);
    if (ea != eb && ea != 1 && eb != 1) {
      bad_from_right = k;
      return false;
    }
    extents[static_cast<std::size_t>(rank - 1 - k)] = ea == 1 ? eb : ea;
  }
  result = Shape(std::span<const std::int64_t>(extents));
  return true;
}

std::string mismatch(const Shape& a, const Shape& b, int k) {
  return "aligned from the right, extent " + std::to_string(aligned_extent(a, k)) + " of " +
         to_string(a) + " meets extent " + std::to_string(aligned_extent(b, k)) + " of " +
         to_string(b) + " (axis -" + std::to_string(k + 1) + ")";
}

constexpr std::string_view kBroadcastFix =
    "make each pair of extents, aligned from the right, equal or 1 (reshape an operand, e.g. "
    "[C] -> [1, C] or [B] -> [B, 1])";

void check_floating_operands(std::string_view op, std::string_view a_name, const Tensor& a,
                             std::string_view b_name, const Tensor& b) {
  detail::check_defined(op, a_name, a);
  detail::check_defined(op, b_name, b);
  detail::check_same_device(op, a_name, a, b_name, b);
  detail::check_same_dtype(op, a_name, a, b_name, b);
  detail::check_floating(op, a_name, a);
}

}  // namespace
}  // namespace tenax::ops

namespace tenax::kernels {

BroadcastLayout make_broadcast_layout(const Shape& out, const Shape& a, const Shape& b) {
  using ops::aligned_strides;
  // A merged dimension: its extent and the strides of the two operands.
  struct Dim {
    std::int64_t extent;
    std::int64_t a_stride;
    std::int64_t b_stride;
  };
  const std::vector<std::int64_t> sa = aligned_strides(a, out.rank());
  const std::vector<std::int64_t> sb = aligned_strides(b, out.rank());
  std::vector<Dim> dims;
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;  // contributes nothing to any offset
    const auto k = static_cast<std::size_t>(d);
    const Dim next{out[d], sa[k], sb[k]};
    if (!dims.empty()) {
      Dim& last = dims.back();
      // Mergeable when each operand steps through the pair as through one dimension (a
      // broadcast operand, stride 0 on both, included).
      if (last.a_stride == next.a_stride * next.extent &&
          last.b_stride == next.b_stride * next.extent) {
        last = {last.extent * next.extent, next.a_stride, next.b_stride};
        continue;
      }
    }
    dims.push_back(next);
  }
  if (dims.empty()) dims.push_back({1, 0, 0});
  BroadcastLayout layout;
  layout.rank = static_cast<int>(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    layout.extent[d] = dims[d].extent;
    layout.a_stride[d] = dims[d].a_stride;
    layout.b_stride[d] = dims[d].b_stride;
  }
  return layout;
}

SumToLayout make_sum_to_layout(const Shape& x, const Shape& target) {
  using ops::aligned_extent;
  using ops::aligned_strides;
  struct Run {
    bool kept;
    std::int64_t extent;
    std::int64_t stride;
  };
  const std::vector<std::int64_t> strides = aligned_strides(x, x.rank());
  std::vector<Run> runs;
  for (int d = 0; d < x.rank(); ++d) {
    if (x[d] == 1) continue;
    const bool kept = aligned_extent(target, x.rank() - 1 - d) == x[d];
    const std::int64_t stride = strides[static_cast<std::size_t>(d)];
    // x is contiguous and the dropped axes have extent 1, so neighbouring axes of one kind merge.
    if (!runs.empty() && runs.back().kept == kept) {
      runs.back().extent *= x[d];
      runs.back().stride = stride;
    } else {
      runs.push_back({kept, x[d], stride});
    }
  }
  SumToLayout layout;
  for (const Run& run : runs) {
    if (run.kept) {
      layout.kept_extent[layout.kept_rank] = run.extent;
      layout.kept_stride[layout.kept_rank++] = run.stride;
    } else {
      layout.reduced_extent[layout.reduced_rank] = run.extent;
      layout.reduced_stride[layout.reduced_rank++] = run.stride;
    }
  }
  if (layout.kept_rank == 0) {
    layout.kept_extent[0] = 1;
    layout.kept_rank = 1;
  }
  if (layout.reduced_rank == 0) {
    layout.reduced_extent[0] = 1;
    layout.reduced_rank = 1;
  }
  return layout;
}

}  // namespace tenax::kernels

namespace tenax::ops {
namespace {

// `shape` broadcasts to x.shape() without changing it.
void check_sums_to(std::string_view op, const Tensor& x, std::string_view target_name,
                   const Shape& shape) {
  Shape joined;
  int bad = 0;
  const bool ok = try_broadcast(shape, x.shape(), joined, bad) && joined == x.shape();
  TENAX_EXPECTS(ok, UsageError,
                std::string(op) + ": " + std::string(target_name) + " has shape " +
                    to_string(shape) + ", which does not broadcast to x, " + x.describe(),
                "pass a shape made of x's extents, some of them 1 or leading ones dropped (e.g. "
                "[B, C] -> [C], [1, C] or [B, 1])");
}

// broadcast_binary's name in messages, e.g. "broadcast_binary(add)".
std::string broadcast_binary_name(BinaryOp op) {
  return std::string("broadcast_binary(") + to_string(op) + ")";
}

// The shape that a and b broadcast to; throws UsageError naming `op` where they do not.
Shape broadcast_operands(std::string_view op, const Tensor& a, const Tensor& b) {
  Shape shape;
  int bad = 0;
  TENAX_EXPECTS(try_broadcast(a.shape(), b.shape(), shape, bad), UsageError,
                std::string(op) + ": a, " + a.describe() + ", and b, " + b.describe() +
                    ", do not broadcast: " + mismatch(a.shape(), b.shape(), bad),
                std::string(kBroadcastFix));
  return shape;
}

}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape result;
  int bad = 0;
  TENAX_EXPECTS(try_broadcast(a, b, result, bad), UsageError,
                "broadcast_shape: shapes " + to_string(a) + " and " + to_string(b) +
                    " do not broadcast: " + mismatch(a, b, bad),
                std::string(kBroadcastFix));
  return result;
}

Tensor broadcast_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const std::string name = broadcast_binary_name(op);
  check_floating_operands(name, "a", a, "b", b);
  const Shape shape = broadcast_operands(name, a, b);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  broadcast_binary_into(op, a, b, out);
  return out;
}

void broadcast_binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::string name = broadcast_binary_name(op);
  check_floating_operands(name, "a", a, "b", b);
  check_floating_operands(name, "a", a, "out", out);
  const Shape shape = broadcast_operands(name, a, b);
  TENAX_EXPECTS(
      out.shape() == shape, UsageError,
      name + ": out is " + out.describe() + " but a, " + a.describe() + ", and b, " + b.describe() +
          ", broadcast to shape " + to_string(shape),
      "pass an out of shape " + to_string(shape) + " (or let ops::broadcast_binary allocate it)");
  detail::check_alias(name, "out", out, "a", a);
  detail::check_alias(name, "out", out, "b", b);
  if (out.numel() == 0) return;
  if (a.shape() == b.shape()) {
    // No broadcasting: the element-wise kernel, whose bits the broadcast body reproduces anyway.
    binary_into(op, a, b, out);
    return;
  }
  const kernels::BroadcastBinaryArgs args{
      op, a, b, out, kernels::make_broadcast_layout(shape, a.shape(), b.shape())};
  if (out.device().is_cpu()) {
    kernels::cpu::broadcast_binary(args);
  } else {
    kernels::cuda::broadcast_binary(args);
  }
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  detail::check_defined("sum_to", "x", x);
  detail::check_floating("sum_to", "x", x);
  check_sums_to("sum_to", x, "shape", shape);
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  sum_to_into(x, out);
  return out;
}

void sum_to_into(const Tensor& x, const Tensor& out) {
  check_floating_operands("sum_to_into", "x", x, "out", out);
  check_sums_to("sum_to_into", x, "out", out.shape());
  detail::check_alias("sum_to_into", "out", out, "x", x);
  if (out.numel() == 0) return;
  if (x.numel() == 0) {
    fill(out, 0.0);  // every output sums nothing
    return;
  }
  const kernels::SumToArgs args{x, out, kernels::make_sum_to_layout(x.shape(), out.shape())};
  if (x.device().is_cpu()) {
    kernels::cpu::sum_to(args);
  } else {
    kernels::cuda::sum_to(args);
  }
}

}  // namespace tenax::ops
