// Element-wise comparison of two CPU tensors for the tests that hold one backend's result to the
// CPU reference bit for bit (gpu_comparison.hpp's expect_identical).
//
// Contract: elements of a floating dtype (f64, f32, f16, bf16) are equal when their bit patterns
// are identical or when both are NaN, whatever the NaN's sign, payload or quiet bit. The backends
// do not promise the same NaN: CUDA's arithmetic returns the canonical NaN (f32 0x7fffffff, f64
// 0x7fffffffffffffff...) where x86 keeps an input's payload, and f16/bf16 narrowing keeps sign and
// payload (half.hpp). Only "it is a NaN" is compared for NaNs; every other element must have the
// same bits, so +0 and -0 differ, and so do a NaN and an infinity. Integer dtypes compare bits.
// The tensors must be on the CPU with the same dtype and element count (the shape is the caller's
// check); otherwise std::invalid_argument. Nothing here needs a GPU.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tenax/core/half.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::testing {

// The bit pattern of element i of a CPU tensor, zero-extended to 64 bits.
[[nodiscard]] inline std::uint64_t element_bits(const Tensor& t, std::int64_t i) {
  const std::size_t size = size_of(t.dtype());
  const auto* base = static_cast<const unsigned char*>(t.data());
  std::uint64_t bits = 0;
  // Little-endian hosts only (x86-64, aarch64): the low bytes of `bits` hold the element.
  std::memcpy(&bits, base + static_cast<std::size_t>(i) * size, size);
  return bits;
}

// Whether `bits` is a NaN of `dtype` (all-ones exponent, nonzero mantissa); false for integers.
[[nodiscard]] constexpr bool is_nan_bits(DType dtype, std::uint64_t bits) noexcept {
  switch (dtype) {
    case DType::f64:
      return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    case DType::f32:
      return (bits & 0x7fffffffull) > 0x7f800000ull;
    case DType::f16:
      return (bits & 0x7fffull) > 0x7c00ull;
    case DType::bf16:
      return (bits & 0x7fffull) > 0x7f80ull;
    default:
      return false;
  }
}

// Element i of a and b under the contract above (same dtype assumed).
[[nodiscard]] inline bool elements_equal(const Tensor& a, const Tensor& b, std::int64_t i) {
  const std::uint64_t x = element_bits(a, i);
  const std::uint64_t y = element_bits(b, i);
  return x == y || (is_nan_bits(a.dtype(), x) && is_nan_bits(a.dtype(), y));
}

namespace detail {
inline void check_comparable(const Tensor& a, const Tensor& b) {
  if (a.device() != Device::cpu() || b.device() != Device::cpu()) {
    throw std::invalid_argument("first_difference: both tensors must be on the CPU, got " +
                                a.describe() + " and " + b.describe() +
                                " -- fix: copy with to(Device::cpu()) first");
  }
  if (a.dtype() != b.dtype() || a.numel() != b.numel()) {
    throw std::invalid_argument("first_difference: " + a.describe() + " and " + b.describe() +
                                " differ in dtype or element count");
  }
}
}  // namespace detail

// The index of the first element (row-major) where a and b differ, or nullopt when every element
// is equal under the contract above. Throws std::invalid_argument as described there.
[[nodiscard]] inline std::optional<std::int64_t> first_difference(const Tensor& a,
                                                                  const Tensor& b) {
  detail::check_comparable(a, b);
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    if (!elements_equal(a, b, i)) {
      return i;
    }
  }
  return std::nullopt;
}

// How many elements differ under the contract above (0 when first_difference is nullopt).
[[nodiscard]] inline std::int64_t count_differences(const Tensor& a, const Tensor& b) {
  detail::check_comparable(a, b);
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    n += elements_equal(a, b, i) ? 0 : 1;
  }
  return n;
}

// Element i of a CPU tensor for a failure message: its value and its bits, e.g.
// "1.00000012 (0x3f800001)", "-0 (0x80000000)", "nan (0xffc00000)".
[[nodiscard]] inline std::string describe_element(const Tensor& t, std::int64_t i) {
  const std::uint64_t bits = element_bits(t, i);
  std::ostringstream text;
  text.precision(std::numeric_limits<double>::max_digits10);
  switch (t.dtype()) {
    case DType::f64:
      text << double_of(bits);
      break;
    case DType::f32:
      text.precision(std::numeric_limits<float>::max_digits10);
      text << float_of(static_cast<std::uint32_t>(bits));
      break;
    case DType::f16:
      text.precision(5);
      text << half_bits_to_float(static_cast<std::uint16_t>(bits));
      break;
    case DType::bf16:
      text.precision(4);
      text << bf16_bits_to_float(static_cast<std::uint16_t>(bits));
      break;
    case DType::i64:
      text << static_cast<std::int64_t>(bits);
      break;
    case DType::i32:
      text << static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
      break;
    case DType::u8:
      text << bits;
      break;
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, " (0x%0*llx)", static_cast<int>(2 * size_of(t.dtype())),
                static_cast<unsigned long long>(bits));
  return text.str() + hex;
}

}  // namespace tenax::testing
