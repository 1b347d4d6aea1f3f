// The checks the axis ops share (axis_split.hpp).
#include "axis_split.hpp"

#include <vector>

#include "tenax/core/error.hpp"

namespace tenax::ops::detail {

Shape with_extent(std::string_view op, const Shape& shape, int axis, std::int64_t extent) {
  std::vector<std::int64_t> extents(shape.extents().begin(), shape.extents().end());
  extents[static_cast<std::size_t>(axis)] = extent;
  try {
    return Shape(std::span<const std::int64_t>(extents));
  } catch (const UsageError& e) {
    throw UsageError(std::string(op) + ": the result's shape cannot be made: " + e.cause(),
                     "use smaller extents (the element count must fit a signed 64-bit integer)");
  }
}

void check_same_or_disjoint(std::string_view op, std::string_view out_name, const Tensor& out,
                            std::string_view in_name, const Tensor& in) {
  const bool same =
      out.data() == in.data() && out.shape() == in.shape() && out.dtype() == in.dtype();
  TENAX_EXPECTS(same || !overlaps(out, in), UsageError,
                std::string(op) + ": " + std::string(out_name) + ", " + out.describe() +
                    ", overlaps " + std::string(in_name) + ", " + in.describe() + ", in memory",
                "pass an " + std::string(out_name) + " that is " + std::string(in_name) +
                    " itself or shares no memory with it (e.g. a new Tensor::empty)");
}

void check_out(std::string_view op, const Tensor& out, const Shape& shape, DType dtype,
               const Tensor& like) {
  check_defined(op, "out", out);
  check_same_device(op, "out", out, "the input", like);
  TENAX_EXPECTS(out.dtype() == dtype, UsageError,
                std::string(op) + ": out is " + out.describe() + " but the result is " +
                    std::string(to_string(dtype)),
                "pass an out of dtype " + std::string(to_string(dtype)) +
                    " (or let the op without _into allocate it)");
  TENAX_EXPECTS(
      out.shape() == shape, UsageError,
      std::string(op) + ": out is " + out.describe() + " but the result has shape " +
          to_string(shape),
      "pass an out of shape " + to_string(shape) + " (or let the op without _into allocate it)");
}

}  // namespace tenax::ops::detail
