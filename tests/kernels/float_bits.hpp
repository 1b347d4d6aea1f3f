// Float bit patterns for the float_math tests: a float from its bits, and its bits as an ordered
// integer (adjacent floats differ by one, across zero too), to count ulps between two floats.
#pragma once

#include <cstdint>
#include <cstring>

namespace tenax::testing {

inline float float_of(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::int64_t ordered(float f) {
  std::int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i < 0 ? -static_cast<std::int64_t>(i & 0x7FFFFFFF) : i;
}

}  // namespace tenax::testing
