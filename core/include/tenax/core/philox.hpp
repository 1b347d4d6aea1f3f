/// Philox4x32-10 counter-based random numbers that are bit-identical on CPU and GPU.
/// @file
/// The stream. A generator state is (seed, offset): a 64-bit key and a position counted in
/// 128-bit Philox blocks. The block function maps
/// @code{.unparsed}
///     block(seed, b, word) = philox4x32_10(counter = (lo32(b), hi32(b), word, 0),
///                                          key     = (lo32(seed), hi32(seed)))
/// @endcode
/// to four 32-bit lanes. A draw of n values at state (seed, offset) defines value i (0 <= i < n)
/// as a pure function of (seed, offset, i), so a GPU grid can compute any value on its own:
/// @code{.unparsed}
///   b = offset + i / 4 (modulo 2^64), lane = i % 4, and
///   bits32(i)     = block(seed, b, 0).v[lane]
///   uniform_f32   = (bits32 >> 8) * 2^-24                          in [0, 1), 24 random bits
///   uniform_f64   = (((bits32 << 32) | block(seed, b, 1).v[lane]) >> 11) * 2^-53
///                                                                  in [0, 1), 53 random bits
///   normal_f32/64 = Box-Muller on the uniform pair (j, j + 1), j = i with its lowest bit cleared
///                   (lanes 0,1 and lanes 2,3 of a block):
///                       r = sqrt(-2 log(1 - u_j)),  theta = 2 pi u_{j+1}
///                       value j = r cos(theta),  value j + 1 = r sin(theta)
///                   (1 - u maps [0, 1) onto (0, 1] exactly, so log never sees 0).
/// @endcode
/// Every draw of n values, of any type and either distribution, uses the blocks
/// [offset, offset + ceil(n / 4)) and nothing else, so a Generator advances its offset by
/// ceil(n / 4) per draw and consecutive draws never share a block. The f64 values use counter
/// word 1 for their low halves (word 0 for their high halves, the same bits as the f32 values),
/// which is why a draw of either type covers the same range of blocks; a uniform_f64 value is its
/// uniform_f32 counterpart plus 29 more bits. Counter words 2 and up are reserved.
///
/// Bit-identical on CPU and GPU: Philox and the uniform transforms are integer arithmetic and
/// exact conversions. log, sin and cos are computed here (portable_log, portable_sincos_2pi) from
/// single IEEE operations only: additions, multiplications, divisions and square roots, each
/// correctly rounded to nearest. Device code uses the CUDA `_rn` intrinsics, which nvcc never
/// fuses into FMAs and which ignore `--use_fast_math`, so the device results do not depend on
/// nvcc flags. Host code must not contract `a*b+c` into an FMA across these helpers: GCC and
/// Clang only do so with `-ffp-contract=fast` (GCC's default in GNU mode, not in the `-std=c++20`
/// mode tenax builds with) or `-ffast-math`. Values are also only identical while denormals are
/// not flushed to zero (the default on both sides); the generators never produce or consume
/// denormals anyway.
///
/// Everything here is header-only, TENAX_HD (callable from CUDA kernels), noexcept and
/// thread-safe (pure functions).
#pragma once

#include <cmath>
#include <cstdint>

#include "tenax/core/half.hpp"
#include "tenax/core/host_device.hpp"

namespace tenax {

/// Four 32-bit words: a Philox counter or output block. A plain aggregate rather than std::array,
/// which device code cannot use without extra nvcc flags.
struct Uint32x4 {
  std::uint32_t v[4];  ///< the words; v[0] is the lowest word of a counter
  /// Word-wise equality.
  [[nodiscard]] TENAX_HD friend constexpr bool operator==(const Uint32x4& a,
                                                          const Uint32x4& b) noexcept {
    return a.v[0] == b.v[0] && a.v[1] == b.v[1] && a.v[2] == b.v[2] && a.v[3] == b.v[3];
  }
};
/// Two 32-bit words: a Philox key (a plain aggregate, like Uint32x4).
struct Uint32x2 {
  std::uint32_t v[2];  ///< the words; v[0] is the low half of the 64-bit seed
};

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;  ///< round multiplier of counter word 0
inline constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;  ///< round multiplier of counter word 2
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  ///< key schedule (Weyl) increment, word 0
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  ///< key schedule (Weyl) increment, word 1

/// The Philox4x32 block function with 10 rounds (Salmon et al., SC'11; matches Random123).
[[nodiscard]] TENAX_HD constexpr Uint32x4 philox4x32_10(Uint32x4 counter, Uint32x2 key) noexcept {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.v[0] += kPhiloxW0;
      key.v[1] += kPhiloxW1;
    }
    const std::uint64_t product0 = static_cast<std::uint64_t>(kPhiloxM0) * counter.v[0];
    const std::uint64_t product1 = static_cast<std::uint64_t>(kPhiloxM1) * counter.v[2];
    const auto hi0 = static_cast<std::uint32_t>(product0 >> 32);
    const auto lo0 = static_cast<std::uint32_t>(product0);
    const auto hi1 = static_cast<std::uint32_t>(product1 >> 32);
    const auto lo1 = static_cast<std::uint32_t>(product1);
    counter = Uint32x4{{hi1 ^ counter.v[1] ^ key.v[0], lo1, hi0 ^ counter.v[3] ^ key.v[1], lo0}};
  }
  return counter;
}

/// Block b of the stream for `seed` (see philox.hpp); word 0 for the f32 values and
/// the high halves of the f64 values, word 1 for the low halves of the f64 values.
[[nodiscard]] TENAX_HD constexpr Uint32x4 philox_block(std::uint64_t seed, std::uint64_t block,
                                                       std::uint32_t word = 0) noexcept {
  return philox4x32_10(
      Uint32x4{
          {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), word, 0u}},
      Uint32x2{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}});
}

/// A float in [0, 1) from the top 24 of 32 random bits: (bits >> 8) * 2^-24. Exact (no rounding
/// happens), so identical everywhere.
[[nodiscard]] TENAX_HD constexpr float uniform_f32_from_bits(std::uint32_t bits) noexcept {
  return static_cast<float>(bits >> 8) * 0x1p-24f;
}
/// A double in [0, 1) from the top 53 of 64 random bits, `high` the upper word:
/// (((high << 32) | low) >> 11) * 2^-53. Exact, like uniform_f32_from_bits.
[[nodiscard]] TENAX_HD constexpr double uniform_f64_from_bits(std::uint32_t high,
                                                              std::uint32_t low) noexcept {
  return static_cast<double>(((static_cast<std::uint64_t>(high) << 32) | low) >> 11) * 0x1p-53;
}

namespace detail {

// Single correctly rounded IEEE operations that no compiler fuses into an FMA or replaces with
// an approximation: on the device the _rn intrinsics, on the host plain operators (FMA
// contraction never crosses a function boundary under -ffp-contract=off or =on).
#if defined(__CUDA_ARCH__)
TENAX_HD inline float add_rn(float a, float b) noexcept { return __fadd_rn(a, b); }
TENAX_HD inline float sub_rn(float a, float b) noexcept { return __fsub_rn(a, b); }
TENAX_HD inline float mul_rn(float a, float b) noexcept { return __fmul_rn(a, b); }
TENAX_HD inline float div_rn(float a, float b) noexcept { return __fdiv_rn(a, b); }
TENAX_HD inline float sqrt_rn(float a) noexcept { return __fsqrt_rn(a); }
TENAX_HD inline double add_rn(double a, double b) noexcept { return __dadd_rn(a, b); }
TENAX_HD inline double sub_rn(double a, double b) noexcept { return __dsub_rn(a, b); }
TENAX_HD inline double mul_rn(double a, double b) noexcept { return __dmul_rn(a, b); }
TENAX_HD inline double div_rn(double a, double b) noexcept { return __ddiv_rn(a, b); }
TENAX_HD inline double sqrt_rn(double a) noexcept { return __dsqrt_rn(a); }
#else
template <class T>
TENAX_HD inline T add_rn(T a, T b) noexcept {
  return a + b;
}
template <class T>
TENAX_HD inline T sub_rn(T a, T b) noexcept {
  return a - b;
}
template <class T>
TENAX_HD inline T mul_rn(T a, T b) noexcept {
  return a * b;
}
template <class T>
TENAX_HD inline T div_rn(T a, T b) noexcept {
  return a / b;
}
template <class T>
TENAX_HD inline T sqrt_rn(T a) noexcept {
  return std::sqrt(a);
}
#endif

/// p(z) = c[0] + z * (c[1] + z * (c[2] + ...)), Horner without contraction.
template <class T, int N>
TENAX_HD inline T horner(T z, const T (&c)[N]) noexcept {
  T acc = c[N - 1];
  for (int k = N - 2; k >= 0; --k) {
    acc = add_rn(c[k], mul_rn(z, acc));
  }
  return acc;
}

}  // namespace detail

/// @name Portable logarithm
///@{

/// Natural logarithm with at most about 1 ulp error, for every input: log(+-0) = -inf,
/// log(+inf) = +inf, log(NaN) = NaN (made quiet), log(negative) = NaN. Reduces x = 2^k * m with
/// m in [sqrt(1/2), sqrt(2)) and evaluates log(m) = f - f^2/2 + s * (f^2/2 + R(s^2)) with
/// f = m - 1, s = f / (2 + f); the reduction and the minimax coefficients of R are those of
/// fdlibm's logf and log (Sun Microsystems, freely redistributable).
[[nodiscard]] TENAX_HD inline float portable_log(float x) noexcept {
  using detail::add_rn, detail::div_rn, detail::mul_rn, detail::sub_rn;
  std::uint32_t bits = bits_of(x);
  int k = 0;
  if (bits >= 0x7f800000u) {  // +inf, NaN, or the sign bit is set
    if (bits == 0x7f800000u) return x;
    if (bits == 0x80000000u) return float_of(0xff800000u);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return float_of(bits | 0x00400000u);
    return float_of(0x7fc00000u);
  }
  if (bits < 0x00800000u) {
    if (bits == 0) return float_of(0xff800000u);
    // Subnormal x = bits * 2^-149 exactly. Converting the integer is exact and, unlike scaling
    // by a power of two, unaffected by flush-to-zero modes.
    bits = bits_of(static_cast<float>(bits));
    k = -149;
  }
  // Offsetting by 1 - sqrt(1/2) makes the exponent field roll over at sqrt(1/2) instead of 1.
  bits += 0x3f800000u - 0x3f3504f3u;
  k += static_cast<int>(bits >> 23) - 127;
  const float m = float_of((bits & 0x007fffffu) + 0x3f3504f3u);
  constexpr float kLn2Hi = 6.9313812256e-01f;  // 0x3f317180: k * kLn2Hi is exact
  constexpr float kLn2Lo = 9.0580006145e-06f;  // 0x3717f7d1
  constexpr float kOddTerms[] = {0xaaaaaa.0p-24f, 0x91e9ee.0p-25f};
  constexpr float kEvenTerms[] = {0xccce13.0p-25f, 0xf89e26.0p-26f};
  const float f = sub_rn(m, 1.0f);  // exact
  const float s = div_rn(f, add_rn(2.0f, f));
  const float z = mul_rn(s, s);
  const float w = mul_rn(z, z);
  const float r =
      add_rn(mul_rn(z, detail::horner(w, kOddTerms)), mul_rn(w, detail::horner(w, kEvenTerms)));
  const float half_f2 = mul_rn(mul_rn(0.5f, f), f);
  const auto dk = static_cast<float>(k);
  const float low = sub_rn(add_rn(mul_rn(s, add_rn(half_f2, r)), mul_rn(dk, kLn2Lo)), half_f2);
  return add_rn(add_rn(low, f), mul_rn(dk, kLn2Hi));
}

[[nodiscard]] TENAX_HD inline double portable_log(double x) noexcept {
  using detail::add_rn, detail::div_rn, detail::mul_rn, detail::sub_rn;
  std::uint64_t bits = bits_of(x);
  int k = 0;
  if (bits >= 0x7ff0000000000000u) {
    if (bits == 0x7ff0000000000000u) return x;
    if (bits == 0x8000000000000000u) return double_of(0xfff0000000000000u);
    if ((bits & 0x7fffffffffffffffu) > 0x7ff0000000000000u) {
      return double_of(bits | 0x0008000000000000u);
    }
    return double_of(0x7ff8000000000000u);
  }
  if (bits < 0x0010000000000000u) {
    if (bits == 0) return double_of(0xfff0000000000000u);
    bits = bits_of(static_cast<double>(bits));  // exact: bits < 2^52
    k = -1074;
  }
  bits += 0x3ff0000000000000u - 0x3fe6a09e00000000u;
  k += static_cast<int>(bits >> 52) - 1023;
  const double m = double_of((bits & 0x000fffffffffffffu) + 0x3fe6a09e00000000u);
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3fe62e42fee00000
  constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3dea39ef35793c76
  constexpr double kOddTerms[] = {6.666666666666735130e-01, 2.857142874366239149e-01,
                                  1.818357216161805012e-01, 1.479819860511658591e-01};
  constexpr double kEvenTerms[] = {3.999999999940941908e-01, 2.222219843214978396e-01,
                                   1.531383769920937332e-01};
  const double f = sub_rn(m, 1.0);
  const double half_f2 = mul_rn(mul_rn(0.5, f), f);
  const double s = div_rn(f, add_rn(2.0, f));
  const double z = mul_rn(s, s);
  const double w = mul_rn(z, z);
  const double r =
      add_rn(mul_rn(z, detail::horner(w, kOddTerms)), mul_rn(w, detail::horner(w, kEvenTerms)));
  const auto dk = static_cast<double>(k);
  const double low = sub_rn(add_rn(mul_rn(s, add_rn(half_f2, r)), mul_rn(dk, kLn2Lo)), half_f2);
  return add_rn(add_rn(low, f), mul_rn(dk, kLn2Hi));
}
///@}

namespace detail {

template <class T>
struct QuarterTurn {
  int quadrant;  ///< 0..3
  bool folded;   ///< y = 1 - r, so sin and cos of the quadrant angle swap
  T y;           ///< in [0, 1/2]
};

template <class T>
TENAX_HD inline QuarterTurn<T> reduce_turn(T u) noexcept {
  const T t = mul_rn(u, T(4));
  const int quadrant = static_cast<int>(t) & 3;
  const T r = sub_rn(t, static_cast<T>(static_cast<int>(t)));
  const bool folded = r > T(0.5);
  return {quadrant, folded, folded ? sub_rn(T(1), r) : r};
}

/// Given s = sin(a), c = cos(a) of the angle within the quadrant, rotate by quadrant * pi/2.
template <class T>
TENAX_HD inline void rotate_quadrant(const QuarterTurn<T>& turn, T sin_y, T cos_y, T* sin_out,
                                     T* cos_out) noexcept {
  const T s = turn.folded ? cos_y : sin_y;
  const T c = turn.folded ? sin_y : cos_y;
  switch (turn.quadrant) {
    case 0:
      *sin_out = s;
      *cos_out = c;
      break;
    case 1:
      *sin_out = c;
      *cos_out = -s;
      break;
    case 2:
      *sin_out = -s;
      *cos_out = -c;
      break;
    default:
      *sin_out = -c;
      *cos_out = s;
      break;
  }
}

}  // namespace detail

/// @name Portable sine and cosine of a turn
///@{

/// sin(2 pi u) into `*sin_out` and cos(2 pi u) into `*cos_out`, for 0 <= u < 1 (other u:
/// unspecified), within about 1-2 ulp.
/// The reduction is exact: 4u splits into a quadrant q and a fraction r without rounding, r is
/// folded to y = min(r, 1 - r) in [0, 1/2] (also exact), and only y * pi/2 in [0, pi/4] rounds
/// before the polynomials, so results near the zeros of sin and cos keep full relative accuracy.
/// Float polynomials: Cephes sinf/cosf; double: fdlibm __kernel_sin/__kernel_cos.
TENAX_HD inline void portable_sincos_2pi(float u, float* sin_out, float* cos_out) noexcept {
  using detail::add_rn, detail::mul_rn, detail::sub_rn;
  const detail::QuarterTurn<float> turn = detail::reduce_turn(u);
  constexpr float kHalfPi = 1.57079632679489661923f;
  constexpr float kSinTerms[] = {-1.6666654611e-1f, 8.3321608736e-3f, -1.9515295891e-4f};
  constexpr float kCosTerms[] = {4.166664568298827e-2f, -1.388731625493765e-3f,
                                 2.443315711809948e-5f};
  const float x = mul_rn(turn.y, kHalfPi);
  const float z = mul_rn(x, x);
  const float sin_x = add_rn(mul_rn(mul_rn(detail::horner(z, kSinTerms), z), x), x);
  const float cos_x =
      add_rn(sub_rn(mul_rn(mul_rn(detail::horner(z, kCosTerms), z), z), mul_rn(0.5f, z)), 1.0f);
  detail::rotate_quadrant(turn, sin_x, cos_x, sin_out, cos_out);
}

TENAX_HD inline void portable_sincos_2pi(double u, double* sin_out, double* cos_out) noexcept {
  using detail::add_rn, detail::mul_rn, detail::sub_rn;
  const detail::QuarterTurn<double> turn = detail::reduce_turn(u);
  constexpr double kHalfPi = 1.57079632679489661923;
  constexpr double kSinTerms[] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                  -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                  -2.50507602534068634195e-08, 1.58969099521155010221e-10};
  constexpr double kCosLow[] = {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                2.48015872894767294178e-05};
  constexpr double kCosHigh[] = {-2.75573143513906633035e-07, 2.08757232129817482790e-09,
                                 -1.13596475577881948265e-11};
  const double x = mul_rn(turn.y, kHalfPi);
  const double z = mul_rn(x, x);
  const double sin_x = add_rn(x, mul_rn(mul_rn(z, x), detail::horner(z, kSinTerms)));
  // cos x = 1 - z/2 + z*r, with the rounding error of 1 - z/2 added back.
  const double w = mul_rn(z, z);
  const double r = add_rn(mul_rn(z, detail::horner(z, kCosLow)),
                          mul_rn(mul_rn(w, w), detail::horner(z, kCosHigh)));
  const double half_z = mul_rn(0.5, z);
  const double one_minus = sub_rn(1.0, half_z);
  const double cos_x =
      add_rn(one_minus, add_rn(sub_rn(sub_rn(1.0, one_minus), half_z), mul_rn(z, r)));
  detail::rotate_quadrant(turn, sin_x, cos_x, sin_out, cos_out);
}
///@}

/// Box-Muller: two independent standard normal values from two uniforms in [0, 1):
/// r = sqrt(-2 log(1 - u_radius)), *z_cos = r cos(2 pi u_angle), *z_sin = r sin(2 pi u_angle).
template <class T>
TENAX_HD inline void box_muller(T u_radius, T u_angle, T* z_cos, T* z_sin) noexcept {
  using detail::mul_rn, detail::sub_rn;
  const T log_u = portable_log(sub_rn(T(1), u_radius));                 // argument in (0, 1], exact
  const T radius = detail::sqrt_rn(sub_rn(T(0), mul_rn(T(2), log_u)));  // +0, never -0
  T s;
  T c;
  portable_sincos_2pi(u_angle, &s, &c);
  *z_cos = mul_rn(radius, c);
  *z_sin = mul_rn(radius, s);
}

/// mean + stddev * z, rounded twice (never fused), as Generator::fill_normal computes it.
template <class T>
[[nodiscard]] TENAX_HD inline T scale_normal(T z, T mean, T stddev) noexcept {
  return detail::add_rn(mean, detail::mul_rn(stddev, z));
}

/// @name Value i of a draw
///@{

/// Value i of a draw at state (seed, offset), as defined in philox.hpp: the raw 32
/// bits, a uniform value in [0, 1) or a standard normal value (mean 0, stddev 1). What
/// Generator's fills and the device kernels compute, one value at a time.
[[nodiscard]] TENAX_HD constexpr std::uint32_t random_bits32(std::uint64_t seed,
                                                             std::uint64_t offset,
                                                             std::uint64_t i) noexcept {
  return philox_block(seed, offset + i / 4).v[i % 4];
}
[[nodiscard]] TENAX_HD constexpr float uniform_f32(std::uint64_t seed, std::uint64_t offset,
                                                   std::uint64_t i) noexcept {
  return uniform_f32_from_bits(random_bits32(seed, offset, i));
}
[[nodiscard]] TENAX_HD constexpr double uniform_f64(std::uint64_t seed, std::uint64_t offset,
                                                    std::uint64_t i) noexcept {
  const std::uint64_t block = offset + i / 4;
  return uniform_f64_from_bits(philox_block(seed, block, 0).v[i % 4],
                               philox_block(seed, block, 1).v[i % 4]);
}
[[nodiscard]] TENAX_HD inline float normal_f32(std::uint64_t seed, std::uint64_t offset,
                                               std::uint64_t i) noexcept {
  const Uint32x4 bits = philox_block(seed, offset + i / 4);
  const std::uint64_t lane = i % 4 & ~std::uint64_t{1};
  float z_cos;
  float z_sin;
  box_muller(uniform_f32_from_bits(bits.v[lane]), uniform_f32_from_bits(bits.v[lane + 1]), &z_cos,
             &z_sin);
  return (i & 1) != 0 ? z_sin : z_cos;
}
[[nodiscard]] TENAX_HD inline double normal_f64(std::uint64_t seed, std::uint64_t offset,
                                                std::uint64_t i) noexcept {
  const Uint32x4 high = philox_block(seed, offset + i / 4, 0);
  const Uint32x4 low = philox_block(seed, offset + i / 4, 1);
  const std::uint64_t lane = i % 4 & ~std::uint64_t{1};
  double z_cos;
  double z_sin;
  box_muller(uniform_f64_from_bits(high.v[lane], low.v[lane]),
             uniform_f64_from_bits(high.v[lane + 1], low.v[lane + 1]), &z_cos, &z_sin);
  return (i & 1) != 0 ? z_sin : z_cos;
}
///@}

/// @name Whole blocks
///@{

/// The four values of stream block `block` into `out[0..3]`: values 4j .. 4j + 3 of a draw at
/// offset block - j. Cheaper than four per-value calls (one Philox evaluation per word, one
/// Box-Muller per pair), for loops and threads that produce whole blocks.
TENAX_HD inline void uniform_f32_block(std::uint64_t seed, std::uint64_t block,
                                       float out[4]) noexcept {
  const Uint32x4 bits = philox_block(seed, block);
  for (int lane = 0; lane < 4; ++lane) out[lane] = uniform_f32_from_bits(bits.v[lane]);
}
TENAX_HD inline void uniform_f64_block(std::uint64_t seed, std::uint64_t block,
                                       double out[4]) noexcept {
  const Uint32x4 high = philox_block(seed, block, 0);
  const Uint32x4 low = philox_block(seed, block, 1);
  for (int lane = 0; lane < 4; ++lane) out[lane] = uniform_f64_from_bits(high.v[lane], low.v[lane]);
}
TENAX_HD inline void normal_f32_block(std::uint64_t seed, std::uint64_t block,
                                      float out[4]) noexcept {
  float u[4];
  uniform_f32_block(seed, block, u);
  box_muller(u[0], u[1], &out[0], &out[1]);
  box_muller(u[2], u[3], &out[2], &out[3]);
}
TENAX_HD inline void normal_f64_block(std::uint64_t seed, std::uint64_t block,
                                      double out[4]) noexcept {
  double u[4];
  uniform_f64_block(seed, block, u);
  box_muller(u[0], u[1], &out[0], &out[1]);
  box_muller(u[2], u[3], &out[2], &out[3]);
}
///@}

}  // namespace tenax
