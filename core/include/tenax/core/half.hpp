/// Exact conversions between float and the two 16-bit float formats, identical on CPU and GPU.
/// @file
/// f16 (IEEE binary16): 1 sign, 5 exponent, 10 mantissa bits; largest finite 65504, smallest
/// normal 2^-14, smallest subnormal 2^-24.
/// bf16 (bfloat16): 1 sign, 8 exponent, 7 mantissa bits; float's range with 8 significant bits.
///
/// Contract of the narrowing conversions (float -> 16 bits):
/// - Round to nearest, ties to even, including into and within the f16 subnormal range.
/// - Values that round beyond the largest finite value become infinity of the same sign (for f16
///   every |x| >= 65520, the midpoint between 65504 and 2^16), values that round below the
///   smallest subnormal become zero of the same sign.
/// - Infinities stay infinities; NaN stays NaN with its sign and the top mantissa (payload) bits
///   kept and the quiet bit set, so a signalling NaN never survives as a signalling one.
///
/// Widening (16 bits -> float) is exact for every non-NaN pattern; NaNs come back quiet with
/// sign and payload kept. Hence f16 -> float -> f16 and bf16 -> float -> bf16 return the same bits
/// for every pattern except signalling NaNs (which come back quiet).
///
/// Everything is integer bit manipulation (and one exact integer-to-float conversion scaled by a
/// power of two), so the result does not depend on the rounding mode, on flush-to-zero or
/// denormals-are-zero settings, on FMA contraction or on the hardware's own conversion
/// instructions: host and device code produce the same bits. The functions are branch-free so that
/// loops over arrays vectorise; kernels/cpu/half_arrays.hpp converts whole arrays with the F16C
/// instructions where the CPU has them (the same bits, tested on every pattern). All functions are
/// constexpr and TENAX_HD (callable from CUDA kernels) and never throw.
#pragma once

#include <cstdint>

#include "tenax/core/dtype.hpp"
#include "tenax/core/host_device.hpp"

namespace tenax {

/// @name Bit casts
///@{

/// The IEEE bit pattern of a float or double and back, unchanged (NaN payloads and signalling
/// NaNs included). __builtin_bit_cast is constexpr and compiles in both host code (GCC, Clang)
/// and nvcc device code, where std::bit_cast is not usable under all nvcc versions.
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
///@}

/// The bf16 pattern nearest to `value` (ties to even), under the narrowing contract of half.hpp;
/// NaN keeps its sign and top payload bits and becomes quiet.
[[nodiscard]] TENAX_HD constexpr std::uint16_t float_to_bf16_bits(float value) noexcept {
  const std::uint32_t bits = bits_of(value);
  // NaN: keep sign and the top 7 payload bits, force the quiet bit so the result cannot become
  // infinity (payload only in the low 16 bits) or stay signalling.
  const std::uint32_t nan = (bits >> 16) | 0x0040u;
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even; a carry out of
  // the mantissa correctly bumps the exponent, up to infinity for the largest floats.
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/// The float with the value of bf16 pattern `bits`: exact (the pattern shifted into the top 16
/// bits), except that a signalling NaN comes back quiet.
[[nodiscard]] TENAX_HD constexpr float bf16_bits_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  // A signalling NaN is made quiet.
  return float_of((wide & 0x7fffffffu) > 0x7f800000u ? wide | 0x00400000u : wide);
}

/// The f16 pattern nearest to `value` (ties to even, subnormals included; |value| >= 65520
/// becomes infinity), under the narrowing contract of half.hpp. Branch-free.
[[nodiscard]] TENAX_HD constexpr std::uint16_t float_to_half_bits(float value) noexcept {
  // Every case is computed and the result selected, without branches, so that loops over arrays
  // vectorise (AVX2 has the per-lane shifts the subnormal case needs).
  const std::uint32_t bits = bits_of(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  // NaN: keep sign and top 10 payload bits, set the quiet bit.
  const std::uint32_t nan = 0x7e00u | ((magnitude >> 13) & 0x03ffu);
  // A normal f16 (or 65504): rebias the exponent from 127 to 15 and round away the low 13
  // mantissa bits, ties to even; a mantissa carry moves into the exponent, which is the
  // correctly rounded value (up to infinity, handled below).
  const std::uint32_t normal =
      (magnitude + 0x0fffu + ((magnitude >> 13) & 1u) - (112u << 23)) >> 13;
  // A subnormal f16 (or zero): value = significand * 2^(exponent - 150) and the f16 unit is 2^-24,
  // so the result is significand >> (126 - exponent), rounded to nearest even by the dropped
  // bits. Shifts of 25 and more (below half the smallest subnormal, float zeros and subnormals)
  // give zero; rounding up from 0x3ff gives 0x400, the smallest normal, as it should.
  const std::uint32_t exponent = magnitude >> 23;
  // 126 - exponent clamped to [14, 31] (below 14 the value is normal and this case unused).
  const std::int32_t unclamped = 126 - static_cast<std::int32_t>(exponent);
  const std::int32_t at_least_14 = unclamped < 14 ? 14 : unclamped;
  const auto shift = static_cast<std::uint32_t>(at_least_14 > 31 ? 31 : at_least_14);
  // Adding halfway - 1 plus the lowest kept bit before the shift rounds to nearest, ties to even
  // (the sum stays below 2^32 for shifts up to 31).
  const std::uint32_t significand = (magnitude & 0x007fffffu) | 0x00800000u;
  const std::uint32_t halfway = 1u << (shift - 1u);
  const std::uint32_t subnormal =
      (significand + (halfway - 1u) + ((significand >> shift) & 1u)) >> shift;
  const std::uint32_t result = magnitude > 0x7f800000u ? nan
                               : magnitude >= 0x477ff000u
                                   ? 0x7c00u  // >= 65520 (and infinity): rounds past 65504
                               : magnitude >= 0x38800000u ? normal  // >= 2^-14
                                                          : subnormal;
  return static_cast<std::uint16_t>(sign | result);
}

/// The float with the value of f16 pattern `bits`: exact for every non-NaN pattern (subnormals
/// too, whatever the flush-to-zero settings); NaNs come back quiet with sign and payload kept.
[[nodiscard]] TENAX_HD constexpr float half_bits_to_float(std::uint16_t bits) noexcept {
  // Branch-free, like float_to_half_bits, so that array loops vectorise.
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x03ffu;
  // Infinity, or NaN made quiet.
  const std::uint32_t special = 0x7f800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);
  const std::uint32_t normal = ((exponent + 112u) << 23) | (mantissa << 13);
  // Zero or subnormal f16, mantissa * 2^-24: the integer converts to float exactly and the
  // product is a normal float (or zero), so this is exact whatever the rounding mode and the
  // flush-to-zero or denormals-are-zero settings.
  const std::uint32_t subnormal = bits_of(static_cast<float>(static_cast<std::int32_t>(mantissa)) *
                                          5.9604644775390625e-8f);  // 2^-24
  const std::uint32_t magnitude = exponent == 0x1fu ? special : exponent == 0 ? subnormal : normal;
  return float_of(sign | magnitude);
}

/// @name Typed conversions
///@{

/// The bit-pattern conversions on the storage types: to_float widens exactly (NaNs made
/// quiet), to_half and to_bfloat16 round to nearest, ties to even.
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
///@}

}  // namespace tenax
