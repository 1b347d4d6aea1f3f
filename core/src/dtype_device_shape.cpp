#include <charconv>
#include <optional>
#include <string>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/shape.hpp"
#include "tenax/core/text.hpp"

namespace tenax {

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f64:
      return "f64";
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::u8:
      return "u8";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (to_string(dtype) == name) return dtype;
  }
  throw UsageError("unknown dtype '" + std::string(name) + "'",
                   "use one of f64, f32, f16, bf16, i64, i32, u8");
}

std::string to_string(const Device& device) {
  if (device.is_cpu()) return "cpu";
  return "cuda:" + std::to_string(device.index);
}

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.starts_with("cuda:")) {
    const int ordinal = parse_whole<int>(text.substr(5)).value_or(-1);
    if (ordinal >= 0) return Device::cuda(ordinal);
  }
  throw UsageError("unknown device '" + std::string(text) + "'",
                   "write 'cpu', 'cuda' or 'cuda:N' with N a device ordinal >= 0");
}

Shape::Shape(std::initializer_list<std::int64_t> extents)
    : Shape(std::span<const std::int64_t>(extents.begin(), extents.size())) {}

Shape::Shape(std::span<const std::int64_t> extents) {
  TENAX_EXPECTS(extents.size() <= kMaxRank, UsageError,
                "shape has rank " + std::to_string(extents.size()) + " but the maximum is " +
                    std::to_string(kMaxRank),
                "reshape the data to at most " + std::to_string(kMaxRank) + " dimensions");
  for (std::size_t axis = 0; axis < extents.size(); ++axis) {
    TENAX_EXPECTS(extents[axis] >= 0, UsageError,
                  "shape extent " + std::to_string(axis) + " is " + std::to_string(extents[axis]) +
                      ", extents must be >= 0",
                  "pass non-negative sizes");
    extents_[axis] = extents[axis];
  }
  rank_ = static_cast<int>(extents.size());
  expect_countable();
}

void Shape::expect_countable() const {
  std::optional<std::int64_t> count = 1;
  for (int axis = 0; axis < rank_ && count; ++axis) {
    count = checked_multiply(*count, extents_[axis]);
  }
  TENAX_EXPECTS(count.has_value(), UsageError,
                "shape " + to_string(*this) + " has more elements than 2^63 - 1",
                "use smaller extents (a tensor's element count must fit a signed 64-bit integer)");
}

std::int64_t Shape::operator[](int axis) const {
  TENAX_EXPECTS(axis >= 0 && axis < rank_, UsageError,
                "axis " + std::to_string(axis) + " is out of range for shape " + to_string(*this),
                "use an axis in [0, " + std::to_string(rank_) + ")");
  return extents_[axis];
}

std::int64_t Shape::numel() const noexcept {
  std::int64_t count = 1;
  for (int axis = 0; axis < rank_; ++axis) count *= extents_[axis];
  return count;
}

Shape Shape::with_leading(std::int64_t extent) const {
  TENAX_EXPECTS(rank_ > 0, UsageError, "a scalar shape has no leading dimension",
                "give the tensor at least one dimension before slicing it");
  TENAX_EXPECTS(extent >= 0, UsageError,
                "leading extent " + std::to_string(extent) + " for shape " + to_string(*this),
                "pass a non-negative extent");
  Shape result = *this;
  result.extents_[0] = extent;
  result.expect_countable();
  return result;
}

bool operator==(const Shape& a, const Shape& b) noexcept {
  if (a.rank_ != b.rank_) return false;
  for (int axis = 0; axis < a.rank_; ++axis) {
    if (a.extents_[axis] != b.extents_[axis]) return false;
  }
  return true;
}

std::string to_string(const Shape& shape) {
  std::string text = "[";
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (axis > 0) text += ", ";
    text += std::to_string(shape[axis]);
  }
  text += ']';
  return text;
}

}  // namespace tenax
