// Element types of tensors. f16 and bf16 are stored as their 16-bit patterns (see half.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tenax {

enum class DType : std::uint8_t { f64, f32, f16, bf16, i64, i32, u8 };

// Storage of the 16-bit float types: the raw bit pattern. Conversions live in half.hpp.
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

// dtype_of<T> maps a C++ element type to its DType.
template <class T>
inline constexpr bool kHasDType = false;
template <class T>
inline constexpr DType dtype_of = DType::u8;
#define TENAX_MAP_DTYPE(Type, value)            \
  template <>                                   \
  inline constexpr bool kHasDType<Type> = true; \
  template <>                                   \
  inline constexpr DType dtype_of<Type> = DType::value
TENAX_MAP_DTYPE(double, f64);
TENAX_MAP_DTYPE(float, f32);
TENAX_MAP_DTYPE(Half, f16);
TENAX_MAP_DTYPE(BFloat16, bf16);
TENAX_MAP_DTYPE(std::int64_t, i64);
TENAX_MAP_DTYPE(std::int32_t, i32);
TENAX_MAP_DTYPE(std::uint8_t, u8);
#undef TENAX_MAP_DTYPE

inline constexpr DType kAllDTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16,
                                       DType::i64, DType::i32, DType::u8};
inline constexpr DType kFloatDTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

[[nodiscard]] constexpr std::size_t size_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::u8:
      return 1;
  }
  return 0;
}

[[nodiscard]] constexpr bool is_floating(DType dtype) noexcept {
  return dtype == DType::f64 || dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

// "f64", "f32", "f16", "bf16", "i64", "i32", "u8".
[[nodiscard]] std::string_view to_string(DType dtype) noexcept;

// Inverse of to_string; throws UsageError naming the accepted spellings.
[[nodiscard]] DType parse_dtype(std::string_view name);

}  // namespace tenax
