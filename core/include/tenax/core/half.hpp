// Exact conversions between float and the two 16-bit float formats, identical on CPU and GPU.
//
// f16 (IEEE binary16): 1 sign, 5 exponent, 10 mantissa bits; largest finite 65504, smallest
// normal 2^-14, smallest subnormal 2^-24.
// bf16 (bfloat16): 1 sign, 8 exponent, 7 mantissa bits; float's range with 8 significant bits.
//
// Contract of the narrowing conversions (float -> 16 bits):
// - Round to nearest, ties to even, including into and within the f16 subnormal range.
// - Values that round beyond the largest finite value become infinity of the same sign (for f16
//   every |x| >= 65520, the midpoint between 65504 and 2^16), values that round below the
//   smallest subnormal become zero of the same sign.
// - Infinities stay infinities; NaN stays NaN with its sign and the top mantissa (payload) bits
//   kept and the quiet bit set, so a signalling NaN never survives as a signalling one.
// Widening (16 bits -> float) is exact for every non-NaN pattern; NaNs come back quiet with
// sign and payload kept. Hence f16 -> float -> f16 and bf16 -> float -> bf16 return the same bits
// for every pattern except signalling NaNs (which come back quiet).
//
// Everything is integer bit manipulation, so the result does not depend on the rounding mode,
// on flush-to-zero settings, on FMA contraction or on the hardware's own conversion
// instructions: host and device code produce the same bits. All functions are constexpr and
// TENAX_HD (callable from CUDA kernels) and never throw.
#pragma once

#include <cstdint>

#include "tenax/core/dtype.hpp"
#include "tenax/core/host_device.hpp"

namespace tenax {

// The IEEE bit pattern of a float and back. __builtin_bit_cast is constexpr and compiles in both
// host code (GCC, Clang) and nvcc device code, where std::bit_cast is not usable under all nvcc
// versions.
[[nodiscard]] TENAX_HD constexpr std::uint32_t bits_of(float value) noexcept {
  return __builtin_bit_cast(std::uint32_t, value);
}
[[nodiscard]] TENAX_HD constexpr float float_of(std::uint32_t bits) noexcept {
  return __builtin_bit_cast(float, bits);
}
[[nodiscard]] TENAX_HD constexpr std::uint64_t bits_of(double value) noexcept {
  return __builtin_bit_cast(std::uint64_t, value);
}
[[nodiscard]] TENAX_HD constexpr double double_of(std::uint64_t bits) noexcept {
  return __builtin_bit_cast(double, bits);
}

[[nodiscard]] TENAX_HD constexpr std::uint16_t float_to_bf16_bits(float value) noexcept {
  const std::uint32_t bits = bits_of(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep sign and the top 7 payload bits, force the quiet bit so the result cannot become
    // infinity (payload only in the low 16 bits) or stay signalling.
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even; a carry out of
  // the mantissa correctly bumps the exponent, up to infinity for the largest floats.
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

[[nodiscard]] TENAX_HD constexpr float bf16_bits_to_float(std::uint16_t bits) noexcept {
  std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  if ((wide & 0x7fffffffu) > 0x7f800000u) {
    wide |= 0x00400000u;  // quiet a signalling NaN
  }
  return float_of(wide);
}

[[nodiscard]] TENAX_HD constexpr std::uint16_t float_to_half_bits(float value) noexcept {
  const std::uint32_t bits = bits_of(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: keep sign and top 10 payload bits, set the quiet bit
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu));
  }
  if (magnitude >= 0x477ff000u) {  // >= 65520 (and infinity): rounds past 65504
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (magnitude >= 0x38800000u) {  // >= 2^-14: the result is a normal f16 (or 65504)
    // Rebias the exponent from 127 to 15 and round away the low 13 mantissa bits, ties to even;
    // a mantissa carry moves into the exponent, which is the correctly rounded value.
    const std::uint32_t lsb = (magnitude >> 13) & 1u;
    const std::uint32_t rounded = magnitude + 0x0fffu + lsb - (112u << 23);
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  const std::uint32_t exponent = magnitude >> 23;
  if (exponent < 102) {  // < 2^-25: below half the smallest subnormal, rounds to zero
    return static_cast<std::uint16_t>(sign);
  }
  // Subnormal result: value = significand * 2^(exponent - 150) and the f16 unit is 2^-24, so the
  // result is significand >> (126 - exponent), rounded to nearest even by the dropped bits.
  // The shift is 14..24. Rounding up from 0x3ff gives 0x400, the smallest normal, as it should.
  const std::uint32_t significand = (magnitude & 0x007fffffu) | 0x00800000u;
  const std::uint32_t shift = 126u - exponent;
  const std::uint32_t quotient = significand >> shift;
  const std::uint32_t remainder = significand & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  const bool round_up = remainder > halfway || (remainder == halfway && (quotient & 1u) != 0);
  return static_cast<std::uint16_t>(sign | (quotient + (round_up ? 1u : 0u)));
}

[[nodiscard]] TENAX_HD constexpr float half_bits_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x03ffu;
  if (exponent == 0x1f) {  // infinity, or NaN made quiet
    return float_of(sign | 0x7f800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u));
  }
  if (exponent != 0) {
    return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) {
    return float_of(sign);
  }
  // Subnormal f16 (mantissa * 2^-24) is a normal float: shift the leading one up to the implicit
  // bit position, lowering the exponent once per shift.
  std::uint32_t float_exponent = 113;  // exponent of 2^-14, the f16 subnormal scale, plus bias
  while ((mantissa & 0x0400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return float_of(sign | (float_exponent << 23) | ((mantissa & 0x03ffu) << 13));
}

[[nodiscard]] TENAX_HD constexpr float to_float(Half value) noexcept {
  return half_bits_to_float(value.bits);
}
[[nodiscard]] TENAX_HD constexpr float to_float(BFloat16 value) noexcept {
  return bf16_bits_to_float(value.bits);
}
[[nodiscard]] TENAX_HD constexpr Half to_half(float value) noexcept {
  return Half{float_to_half_bits(value)};
}
[[nodiscard]] TENAX_HD constexpr BFloat16 to_bfloat16(float value) noexcept {
  return BFloat16{float_to_bf16_bits(value)};
}

}  // namespace tenax
