#include "tenax/core/checked_size.hpp"

#include <cmath>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax {
namespace {

std::string factors_text(std::initializer_list<std::int64_t> factors) {
  std::string text;
  for (const std::int64_t factor : factors) {
    if (!text.empty()) text += " * ";
    text += std::to_string(factor);
  }
  return text;
}

[[noreturn]] void throw_too_large(std::string_view what, const std::string& expression,
                                  std::string_view fix) {
  throw UsageError(std::string(what) + " (" + expression +
                       ") cannot be counted: a size must be a non-negative number below 2^63",
                   std::string(fix));
}

}  // namespace

std::int64_t size_product(std::string_view what, std::initializer_list<std::int64_t> factors,
                          std::string_view fix) {
  const std::optional<std::int64_t> product = checked_product(factors);
  if (!product) throw_too_large(what, factors_text(factors), fix);
  return *product;
}

std::int64_t size_sum(std::string_view what, std::int64_t a, std::int64_t b, std::string_view fix) {
  const std::optional<std::int64_t> sum = checked_add(a, b);
  if (!sum) throw_too_large(what, std::to_string(a) + " + " + std::to_string(b), fix);
  return *sum;
}

std::int64_t largest_root(std::int64_t limit, int power) noexcept {
  if (limit <= 0 || power < 1) return 0;
  // The floating-point root is within one of the answer; correct it with exact products.
  auto n = static_cast<std::int64_t>(
      std::pow(static_cast<long double>(limit), 1.0L / static_cast<long double>(power)));
  const auto fits = [&](std::int64_t side) {
    std::optional<std::int64_t> value = 1;
    for (int p = 0; p < power && value; ++p) value = checked_multiply(*value, side);
    return value && *value <= limit;
  };
  while (n > 0 && !fits(n)) --n;
  while (fits(n + 1)) ++n;
  return n;
}

}  // namespace tenax
