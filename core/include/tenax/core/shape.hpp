// Shape of a contiguous row-major tensor: up to kMaxRank extents, each >= 0.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace tenax {

class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;  // rank 0: a scalar with one element
  Shape(std::initializer_list<std::int64_t> extents);
  explicit Shape(std::span<const std::int64_t> extents);

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] std::int64_t operator[](int axis) const;  // throws UsageError when out of range
  [[nodiscard]] std::int64_t numel() const noexcept;
  [[nodiscard]] std::span<const std::int64_t> extents() const noexcept {
    return {extents_.data(), static_cast<std::size_t>(rank_)};
  }
  // Same shape with the first extent replaced (used for views along the first dimension).
  [[nodiscard]] Shape with_leading(std::int64_t extent) const;

  friend bool operator==(const Shape& a, const Shape& b) noexcept;

 private:
  std::array<std::int64_t, kMaxRank> extents_{};
  int rank_ = 0;
};

// "[2, 3, 4]"; a scalar is "[]".
[[nodiscard]] std::string to_string(const Shape& shape);

}  // namespace tenax
