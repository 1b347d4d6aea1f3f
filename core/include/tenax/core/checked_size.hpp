/// Sizes computed from user input (grid points, matrix entries, bytes) with overflow checked:
/// one rule for every layer, so that a flag like `--n 6074001000` is refused with its name instead
/// of wrapping to a small size that is then allocated and overrun.
/// @file
/// Sizes are non-negative std::int64_t (the dtype of every extent in tenax). The checked forms
/// return std::nullopt when a factor is negative or the exact result exceeds INT64_MAX; the
/// throwing forms raise UsageError naming what was computed, the factors and the fix.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace tenax {

/// a * b, or nullopt when a or b is negative or the product exceeds INT64_MAX.
[[nodiscard]] constexpr std::optional<std::int64_t> checked_multiply(std::int64_t a,
                                                                     std::int64_t b) noexcept {
  std::int64_t product = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

/// a + b, or nullopt when a or b is negative or the sum exceeds INT64_MAX.
[[nodiscard]] constexpr std::optional<std::int64_t> checked_add(std::int64_t a,
                                                                std::int64_t b) noexcept {
  std::int64_t sum = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

/// a * b for sizes a, b >= 0, or INT64_MAX when that overflows: for bounds ("at most this many")
/// where a saturated value compares correctly.
[[nodiscard]] constexpr std::int64_t saturating_multiply(std::int64_t a, std::int64_t b) noexcept {
  return checked_multiply(a, b).value_or(INT64_MAX);
}

/// The product of `factors` (1 for none), or nullopt as for checked_multiply.
[[nodiscard]] constexpr std::optional<std::int64_t> checked_product(
    std::initializer_list<std::int64_t> factors) noexcept {
  std::optional<std::int64_t> product = 1;
  for (const std::int64_t factor : factors) {
    product = checked_multiply(*product, factor);
    if (!product) return std::nullopt;
  }
  return product;
}

/// The product of `factors` (1 for none); UsageError when a factor is negative or the product
/// exceeds INT64_MAX. `what` says what is computed, `fix` what to change (the error's fix); the
/// cause is `what` followed by the factors, e.g. for `what` = `--n 6074001000: the grid's points`:
/// `--n 6074001000: the grid's points (6074001000 * 6074001000) cannot be counted: ...`.
[[nodiscard]] std::int64_t size_product(std::string_view what,
                                        std::initializer_list<std::int64_t> factors,
                                        std::string_view fix);

/// a + b; UsageError when a or b is negative or the sum exceeds INT64_MAX, worded as for
/// size_product (the cause shows `a + b`).
[[nodiscard]] std::int64_t size_sum(std::string_view what, std::int64_t a, std::int64_t b,
                                    std::string_view fix);

/// The largest n >= 0 with n^power <= limit: the biggest grid side that a limit allows, for
/// fixes that name it. Exact (checked integer products); 0 when limit <= 0 or power < 1.
[[nodiscard]] std::int64_t largest_root(std::int64_t limit, int power) noexcept;

}  // namespace tenax
