/// exp, tanh, sigmoid and erfc for f32 compute (f32, f16 and bf16 tensors), evaluated in double
/// from a polynomial and rounded once to float.
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
/// of each function (exp: +inf and +0; tanh: ±1; sigmoid: 1 and +0; erfc: +0 and 2).
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

/// erfc(a) e^(a^2) in double for a in [0, 10.5], to within 2e-15 relative: t Q(t) with
/// t = 1 / (1 + a/2) and Q a polynomial of degree 20 (in s = (2t - 1.16) / 0.84, which maps the
/// range onto [-1, 1]) interpolating erfc(a) e^(a^2) / t at Chebyshev nodes (kernels/erfc_fit.py
/// derives the coefficients and measures the error). Scaled so that a caller that has e^(-a^2)
/// already (the normal density) does not compute a second exponential.
TENAX_HD inline double erfcx_for_f32(double a) {
  const double t = 1.0 / (1.0 + 0.5 * a);
  const double s = (2.0 * t - 1.16) * (1.0 / 0.84);
  double q = -4.2140242448894777e-10;
  q = q * s + 1.7265416235750592e-09;
  q = q * s + 2.162148875235615e-11;
  q = q * s + -1.3062603773882616e-08;
  q = q * s + 2.8880569312999877e-08;
  q = q * s + 1.0464483535763015e-08;
  q = q * s + -1.9771440406558603e-07;
  q = q * s + 4.166176499209403e-07;
  q = q * s + 2.890961852898769e-07;
  q = q * s + -3.5026818588727535e-06;
  q = q * s + 5.681440168489024e-06;
  q = q * s + 1.4181834533694618e-05;
  q = q * s + -7.11637454591734e-05;
  q = q * s + 2.8259860639422107e-06;
  q = q * s + 0.0006251753359185763;
  q = q * s + -0.0006719585143824834;
  q = q * s + -0.0063273420596905335;
  q = q * s + 0.0063079195435301804;
  q = q * s + 0.10352099342821253;
  q = q * s + 0.32718793137802954;
  q = q * s + 0.5694087224462933;
  return t * q;
}

/// erfc(x) in double for x not NaN, to within 1e-14 relative, for the f32 functions below: for
/// a = |x| clamped to 10.5 (where erfc is already far below the smallest float),
/// erfc(a) = erfcx_for_f32(a) e^(-a^2) and erfc(-a) = 2 - erfc(a).
TENAX_HD inline double erfc_for_f32(double x) {
  const double a = clamp_keep_nan(x < 0 ? -x : x, 10.5);
  const double tail = erfcx_for_f32(a) * exp_in_range(-(a * a));
  return x < 0 ? 2.0 - tail : tail;
}

/// erfc(v) rounded to float: +0 above about 10.05, 2 below about -10.05 (and at -inf), NaN for
/// NaN. Host and device give the same bits.
TENAX_HD inline float erfc_f32(float v) {
  const float result = static_cast<float>(erfc_for_f32(v));
  return v != v ? v : result;
}
}  // namespace tenax::kernels
