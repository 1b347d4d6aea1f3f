/// Element types of tensors. f16 and bf16 are stored as their 16-bit patterns (see half.hpp). @file
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tenax {

/// The element type of a tensor. Files (checkpoints, datasets) store it by its name,
/// to_string(DType), not by its numeric value.
enum class DType : std::uint8_t {
  f64,   ///< IEEE binary64, C++ `double`
  f32,   ///< IEEE binary32, C++ `float`
  f16,   ///< IEEE binary16, stored as Half
  bf16,  ///< bfloat16, stored as BFloat16
  i64,   ///< std::int64_t
  i32,   ///< std::int32_t
  u8     ///< std::uint8_t
};

/// Storage of the 16-bit float types: the raw bit pattern. Conversions live in half.hpp.
struct Half {
  std::uint16_t bits;  ///< IEEE binary16 bit pattern: sign, 5 exponent bits, 10 mantissa bits
};
/// Storage of bfloat16: the raw bit pattern, the top 16 bits of the float with the same value.
/// Conversions live in half.hpp.
struct BFloat16 {
  std::uint16_t bits;  ///< bfloat16 bit pattern: sign, 8 exponent bits, 7 mantissa bits
};

/// Whether the C++ type T is a tensor element type: true for double, float, Half, BFloat16,
/// std::int64_t, std::int32_t and std::uint8_t (without const), false for every other type.
template <class T>
inline constexpr bool kHasDType = false;
/// The DType of the element type T: f64 for double, f32 for float, f16 for Half, bf16 for
/// BFloat16, i64, i32 and u8 for std::int64_t, std::int32_t and std::uint8_t. Meaningful only
/// where `kHasDType<T>` is true (for other types it is DType::u8); test that first, e.g. in a
/// static_assert.
template <class T>
inline constexpr DType dtype_of = DType::u8;
/// @cond
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
/// @endcond

/// Every DType, in enumeration order (for loops in tests and parsers).
inline constexpr DType kAllDTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16,
                                       DType::i64, DType::i32, DType::u8};
/// The floating-point DTypes, widest first: those for which is_floating() is true.
inline constexpr DType kFloatDTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

/// Bytes of one element of `dtype` (8, 4, 2 or 1); 0 for a value outside the enumeration.
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

/// Whether `dtype` is a floating-point type: f64, f32, f16 or bf16.
[[nodiscard]] constexpr bool is_floating(DType dtype) noexcept {
  return dtype == DType::f64 || dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

/// The enumerator's name: `"f64"`, `"f32"`, `"f16"`, `"bf16"`, `"i64"`, `"i32"`, `"u8"`
/// (`"unknown"` outside the enumeration).
[[nodiscard]] std::string_view to_string(DType dtype) noexcept;

/// Inverse of to_string(DType): the exact, case-sensitive name. Throws UsageError naming the
/// accepted spellings for anything else.
[[nodiscard]] DType parse_dtype(std::string_view name);

}  // namespace tenax
