// Small helpers shared by the Matrix Market reader and writer (private to io/src).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace tenax::io::detail {

inline std::string str(std::int64_t v) { return std::to_string(v); }

// a * b, or the largest int64 when that overflows (sizes are non-negative).
inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (a == 0 || b == 0) return 0;
  return a > kMax / b ? kMax : a * b;
}

}  // namespace tenax::io::detail
