/// Shape of a contiguous row-major tensor: up to kMaxRank extents, each >= 0. @file
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace tenax {

/// The extents of a tensor, outermost first: a small value type stored inline (no allocation).
/// Every extent is >= 0 and the rank is at most kMaxRank; the constructors enforce both.
class Shape {
 public:
  static constexpr int kMaxRank = 8;  ///< most dimensions a shape can have

  Shape() = default;  ///< rank 0: a scalar with one element
  /// @name Construction from extents
  ///@{

  /// The shape with these extents, outermost first (`Shape{2, 3}`: 2 rows of 3). Throws
  /// UsageError when there are more than kMaxRank extents, one is negative, or their product
  /// exceeds 2^63 - 1.
  Shape(std::initializer_list<std::int64_t> extents);
  explicit Shape(std::span<const std::int64_t> extents);
  ///@}

  /// Number of dimensions, 0 to kMaxRank.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Extent of dimension `axis`; throws UsageError unless 0 <= axis < rank().
  [[nodiscard]] std::int64_t operator[](int axis) const;
  /// Number of elements: the product of the extents, 1 for a scalar, 0 when any extent is 0. It
  /// fits std::int64_t: every constructor checks it.
  [[nodiscard]] std::int64_t numel() const noexcept;
  /// The rank() extents, outermost first; a view into this Shape, valid while it lives.
  [[nodiscard]] std::span<const std::int64_t> extents() const noexcept {
    return {extents_.data(), static_cast<std::size_t>(rank_)};
  }
  /// Same shape with the first extent replaced (used for views along the first dimension).
  /// Throws UsageError for a scalar shape, a negative extent, or an element count over 2^63 - 1.
  [[nodiscard]] Shape with_leading(std::int64_t extent) const;

  /// Same rank and same extents.
  friend bool operator==(const Shape& a, const Shape& b) noexcept;

 private:
  /// UsageError unless the product of the extents fits std::int64_t.
  void expect_countable() const;

  std::array<std::int64_t, kMaxRank> extents_{};
  int rank_ = 0;
};

/// `"[2, 3, 4]"`; a scalar is `"[]"`.
[[nodiscard]] std::string to_string(const Shape& shape);

}  // namespace tenax
