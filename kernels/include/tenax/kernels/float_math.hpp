/// exp, tanh and sigmoid for f32 compute (f32, f16 and bf16 tensors), evaluated in double from a
/// polynomial and rounded once to float.
/// @file
/// Why not expf/tanhf: the library functions are opaque calls, so a CPU loop over them runs one
/// element at a time (a tanh layer of a small MLP cost more than its GEMM), and the CPU's and the
/// GPU's libraries round differently. These are plain arithmetic in TENAX_HD functions: CPU loops
/// vectorise them, and since the kernels are built without contraction (-ffp-contract=off,
/// nvcc --fmad=false) the GPU computes the same bits as the CPU.
///
/// Accuracy: e^r on |r| <= ln2/2 by its Taylor polynomial to degree 13 (truncation < 5e-18), 2^k
/// exactly, so the double result is within a few double ulps of the true value and its rounding to
/// float is the correctly rounded result except within ~1e-15 relative of a float rounding
/// boundary (then off by one float ulp). NaN stays NaN; infinities and overflow give the limits
/// of each function (exp: +inf and +0; tanh: ±1; sigmoid: 1 and +0).
#pragma once

#include <math.h>

#include <cstdint>

#include "tenax/core/host_device.hpp"

namespace tenax::kernels {

/// e^y for y in [-160, 160] (not NaN).
TENAX_HD inline double exp_in_range(double y) {
  constexpr double kInvLn2 = 1.44269504088896338700;
  // ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (fdlibm's constants).
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  // Adding 1.5 * 2^52 rounds to an integer held in the low mantissa bits.
  constexpr double kShifter = 6755399441055744.0;
  const double shifted = y * kInvLn2 + kShifter;
  const double k = shifted - kShifter;
  const double r = (y - k * kLn2Hi) - k * kLn2Lo;
  // Taylor coefficients 1/13!, ..., 1/2!, 1, 1 (Horner).
  double p = 1.6059043836821614599e-10;
  p = p * r + 2.0876756987868098979e-09;
  p = p * r + 2.5052108385441718775e-08;
  p = p * r + 2.7557319223985890653e-07;
  p = p * r + 2.7557319223985890653e-06;
  p = p * r + 2.4801587301587301587e-05;
  p = p * r + 1.9841269841269841270e-04;
  p = p * r + 1.3888888888888888889e-03;
  p = p * r + 8.3333333333333333333e-03;
  p = p * r + 4.1666666666666666667e-02;
  p = p * r + 1.6666666666666666667e-01;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^k from the bits: k = bits(shifted) - bits(kShifter) exactly, |k| <= 231.
  const std::int64_t ki =
      __builtin_bit_cast(std::int64_t, shifted) - __builtin_bit_cast(std::int64_t, kShifter);
  const double two_k = __builtin_bit_cast(double, (ki + 1023) << 52);
  return p * two_k;
}

/// y clamped to [-limit, limit], NaN kept (a NaN fails both comparisons).
TENAX_HD inline double clamp_keep_nan(double y, double limit) {
  return y < -limit ? -limit : (y > limit ? limit : y);
}

/// e^v rounded to float (see the file for accuracy): +inf above about 88.72, +0 below about
/// -103.97, NaN for NaN. Host and device give the same bits.
TENAX_HD inline float exp_f32(float v) {
  // e^150 overflows float and e^-150 rounds to +0: the clamp changes no result.
  const float result = static_cast<float>(exp_in_range(clamp_keep_nan(v, 150.0)));
  return v != v ? v : result;
}

/// tanh(v) rounded to float: odd, ±0 kept, ±1 once |v| exceeds about 9.01 (by rounding), NaN
/// for NaN; a series below |v| = 1e-4 avoids cancellation. Host and device give the same bits.
TENAX_HD inline float tanh_f32(float v) {
  const double x = v;
  // tanh(20) rounds to 1 in double already.
  const double a = clamp_keep_nan(x < 0 ? -x : x, 20.0);
  const double e = exp_in_range(2.0 * a);
  const double large = (e - 1.0) / (e + 1.0);
  // Below 1e-4 the difference e - 1 would cancel; the series is exact to double there.
  const double a2 = a * a;
  const double small = a - a * a2 * (1.0 / 3.0) + a * a2 * a2 * (2.0 / 15.0);
  const double t = a < 1e-4 ? small : large;
  const float result = static_cast<float>(x < 0 ? -t : t);
  // NaN stays NaN, and tanh(-0) = -0 (the series gives +0 for both zeros).
  return v != v || v == 0.0f ? v : result;
}

/// 1 / (1 + e^-v) rounded to float: 1 for large v, +0 below about -103.97, NaN for NaN. Host and
/// device give the same bits.
TENAX_HD inline float sigmoid_f32(float v) {
  const double e = exp_in_range(clamp_keep_nan(-static_cast<double>(v), 150.0));
  const float result = static_cast<float>(1.0 / (1.0 + e));
  return v != v ? v : result;
}

}  // namespace tenax::kernels
