/// Element-wise kernel bodies, written once and run by both backends.
/// @file
/// Each body is a small functor whose TENAX_HD operator()(i) handles element i. The CPU backend
/// calls it from a tight loop over a chunk of a parallel_for, the CUDA backend from a grid-stride
/// loop, so the arithmetic the GPU runs is the arithmetic the CPU tests check. Storage types are
/// double, float, Half and BFloat16; the 16-bit types are loaded into float, computed in float
/// and rounded to nearest even on store (half.hpp, the same bits on host and device).
///
/// Internal to the kernels layer: ops users call tenax::ops (ops_elementwise.hpp).
#pragma once

#include <math.h>  // the global expf, tanhf, ... that CUDA also declares for device code
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tenax/core/dtype.hpp"
#include "tenax/core/half.hpp"
#include "tenax/core/host_device.hpp"
#include "tenax/core/philox.hpp"
#include "tenax/kernels/float_math.hpp"

namespace tenax::kernels {

// ---- storage <-> compute ----

template <class S>
struct ComputeOf {
  using type = S;
};
template <>
struct ComputeOf<Half> {
  using type = float;
};
template <>
struct ComputeOf<BFloat16> {
  using type = float;
};
/// The type a storage type is computed in: float for f16/bf16, itself otherwise.
template <class S>
using compute_t = typename ComputeOf<S>::type;

TENAX_HD inline double load(double v) { return v; }
TENAX_HD inline float load(float v) { return v; }
TENAX_HD inline float load(Half v) { return half_bits_to_float(v.bits); }
TENAX_HD inline float load(BFloat16 v) { return bf16_bits_to_float(v.bits); }

TENAX_HD inline void store(double& dst, double v) { dst = v; }
TENAX_HD inline void store(float& dst, float v) { dst = v; }
TENAX_HD inline void store(Half& dst, float v) { dst.bits = float_to_half_bits(v); }
TENAX_HD inline void store(BFloat16& dst, float v) { dst.bits = float_to_bf16_bits(v); }

/// `value` rounded to storage type S the way both backends store a scalar argument (integers
/// truncate; callers check the range first).
template <class S>
TENAX_HD S from_double(double value) {
  if constexpr (std::is_integral_v<S>) {
    return static_cast<S>(value);
  } else {
    S stored;
    store(stored, static_cast<compute_t<S>>(value));
    return stored;
  }
}

/// True for infinities and NaNs. Written as a comparison (NaN compares false) so that CPU loops
/// vectorise; no fast-math is in effect, so the compiler keeps the NaN semantics.
TENAX_HD inline bool is_nonfinite(float v) { return !(fabsf(v) <= FLT_MAX); }
TENAX_HD inline bool is_nonfinite(double v) { return !(fabs(v) <= DBL_MAX); }

// ---- unary operations (UnaryOp) ----

struct NegOp {
  template <class T>
  TENAX_HD T operator()(T v) const {
    return -v;
  }
};
struct AbsOp {
  TENAX_HD float operator()(float v) const { return fabsf(v); }
  TENAX_HD double operator()(double v) const { return fabs(v); }
};
/// The f32 exp, tanh and sigmoid are float_math.hpp's: vectorisable, and the same bits on both
/// backends.
struct ExpOp {
  TENAX_HD float operator()(float v) const { return exp_f32(v); }
  TENAX_HD double operator()(double v) const { return ::exp(v); }
};
struct LogOp {
  TENAX_HD float operator()(float v) const { return logf(v); }
  TENAX_HD double operator()(double v) const { return ::log(v); }
};
struct SqrtOp {
  TENAX_HD float operator()(float v) const { return sqrtf(v); }
  TENAX_HD double operator()(double v) const { return ::sqrt(v); }
};
struct TanhOp {
  TENAX_HD float operator()(float v) const { return tanh_f32(v); }
  TENAX_HD double operator()(double v) const { return ::tanh(v); }
};
/// max(v, 0); NaN stays NaN.
struct ReluOp {
  template <class T>
  TENAX_HD T operator()(T v) const {
    return v < T(0) ? T(0) : v;
  }
};
/// The derivative of relu: 1 for v > 0, 0 for v <= 0; a NaN stays NaN so that anomaly checks see
/// it in the gradient too.
struct StepOp {
  template <class T>
  TENAX_HD T operator()(T v) const {
    return v > T(0) ? T(1) : (v != v ? v : T(0));
  }
};
struct SigmoidOp {
  TENAX_HD float operator()(float v) const { return sigmoid_f32(v); }
  TENAX_HD double operator()(double v) const { return 1.0 / (1.0 + ::exp(-v)); }
};
struct SquareOp {
  template <class T>
  TENAX_HD T operator()(T v) const {
    return v * v;
  }
};
struct ErfOp {
  TENAX_HD float operator()(float v) const { return erff(v); }
  TENAX_HD double operator()(double v) const { return ::erf(v); }
};

/// 1/sqrt(2) and 1/sqrt(2 pi), for the standard normal CDF and density.
inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// Phi(v), the standard normal CDF, and phi(v), its density, of one v.
template <class T>
struct NormalCdfPdf {
  T cdf;
  T pdf;
};

/// Phi(v) = 0.5 erfc(-v / sqrt 2) (1 + erf(v / sqrt 2) would cancel for negative v and lose the
/// tail) and phi(v) = e^(-v^2/2) / sqrt(2 pi), in double for the f32 compute of the ops below:
/// from float_math.hpp's scaled erfc, the exponential shared (with a = |v| / sqrt 2,
/// erfc(a) = erfcx(a) e^(-v^2/2)), both within ~1e-14 relative. Past |v| = sqrt(300) the
/// exponential is taken as 0 (it is below e^-150: 0 in float), so Phi is exactly 0 or 1 and phi 0
/// there and at the infinities. Plain arithmetic: vectorised on the CPU, the same bits on the GPU.
/// NaN gives NaN.
TENAX_HD inline NormalCdfPdf<double> normal_cdf_pdf_for_f32(float v) {
  const double x = v;
  const double half_square = 0.5 * x * x;
  const double e = half_square > 150.0 ? 0.0 : exp_in_range(-half_square);
  // erfcx's argument is clamped at 10.5 (|v| ~ 14.8), where e is already below e^-110.
  const double a = clamp_keep_nan((x < 0 ? -x : x) * kInvSqrt2, 10.5);
  const double half_tail = 0.5 * erfcx_for_f32(a) * e;  // 0.5 erfc(|v| / sqrt 2)
  return {x > 0 ? 1.0 - half_tail : half_tail, e * kInvSqrt2Pi};
}

/// gelu(v) = v Phi(v) (the exact form, not the tanh approximation). Where Phi(v) underflows to 0
/// (v below about -38 in f64, -17 in f32, and -inf) the result is -0 rather than -inf * 0 = NaN.
/// f32 compute: the product in double, rounded once (so subnormal results keep their accuracy).
struct GeluOp {
  TENAX_HD float operator()(float v) const {
    const double cdf = normal_cdf_pdf_for_f32(v).cdf;
    const auto result = static_cast<float>(static_cast<double>(v) * cdf);
    return v != v ? v : (cdf == 0.0 ? -0.0f : result);
  }
  TENAX_HD double operator()(double v) const {
    const double cdf = 0.5 * ::erfc(-v * kInvSqrt2);
    return cdf == 0.0 ? -0.0 : v * cdf;
  }
};
/// gelu'(v) = Phi(v) + v phi(v). Where phi(v) underflows to 0 the second term is 0 (so
/// gelu_grad(+inf) = 1 and gelu_grad(-inf) = 0 rather than NaN). f32 compute: in double, rounded
/// once.
struct GeluGradOp {
  TENAX_HD float operator()(float v) const {
    const NormalCdfPdf<double> normal = normal_cdf_pdf_for_f32(v);
    const double x = v;
    const auto result = static_cast<float>(normal.cdf + (normal.pdf == 0.0 ? 0.0 : x * normal.pdf));
    return v != v ? v : result;
  }
  TENAX_HD double operator()(double v) const {
    const double pdf = ::exp(-0.5 * v * v) * kInvSqrt2Pi;
    return 0.5 * ::erfc(-v * kInvSqrt2) + (pdf == 0.0 ? 0.0 : v * pdf);
  }
};

/// sqrt(2 / pi) and the cubic coefficient of the tanh approximation of gelu.
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;
inline constexpr double kGeluCubic = 0.044715;
/// gelu_tanh(v) = 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))); -0 where the tanh is -1.
struct GeluTanhOp {
  template <class T>
  TENAX_HD T operator()(T v) const {
    const T t = TanhOp{}(T(kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v));
    return t == T(-1) ? T(-0.0) : T(0.5) * v * (T(1) + t);
  }
};
/// The derivative of gelu_tanh; its second term is 0 where 1 - t^2 is.
struct GeluTanhGradOp {
  template <class T>
  TENAX_HD T operator()(T v) const {
    const T t = TanhOp{}(T(kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v));
    const T sech2 = T(1) - t * t;
    const T slope = sech2 == T(0)
                        ? T(0)
                        : T(0.5) * v * sech2 * T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v * v);
    return T(0.5) * (T(1) + t) + slope;
  }
};

// ---- binary operations (BinaryOp) ----

struct AddOp {
  template <class T>
  TENAX_HD T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubOp {
  template <class T>
  TENAX_HD T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulOp {
  template <class T>
  TENAX_HD T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivOp {
  template <class T>
  TENAX_HD T operator()(T a, T b) const {
    return a / b;
  }
};
/// NaN-propagating: a NaN in either operand gives NaN.
struct MaximumOp {
  template <class T>
  TENAX_HD T operator()(T a, T b) const {
    return (a != a || a > b) ? a : b;
  }
};
struct MinimumOp {
  template <class T>
  TENAX_HD T operator()(T a, T b) const {
    return (a != a || a < b) ? a : b;
  }
};

// ---- bodies: functor(i) handles element i ----

/// t[i] = value, where value is already in t's storage type.
template <class S>
struct FillBody {
  S* t;
  S value;
  TENAX_HD void operator()(std::int64_t i) const { t[i] = value; }
};

/// dst[i] = src[i] converted (through src's compute type, then dst's compute type).
template <class D, class S>
struct CastBody {
  D* dst;
  const S* src;
  TENAX_HD void operator()(std::int64_t i) const {
    store(dst[i], static_cast<compute_t<D>>(load(src[i])));
  }
};

/// y = a * x + b * y.
template <class S>
struct AxpbyBody {
  const S* x;
  S* y;
  compute_t<S> a;
  compute_t<S> b;
  TENAX_HD void operator()(std::int64_t i) const { store(y[i], a * load(x[i]) + b * load(y[i])); }
};

/// y = a * x (axpby with b == 0: y is not read).
template <class S>
struct AxBody {
  const S* x;
  S* y;
  compute_t<S> a;
  TENAX_HD void operator()(std::int64_t i) const { store(y[i], a * load(x[i])); }
};

template <class Op, class S>
struct UnaryBody {
  const S* x;
  S* out;
  Op op;
  TENAX_HD void operator()(std::int64_t i) const { store(out[i], op(load(x[i]))); }
};

/// out[i] = op(x[i]) * g[i], op's result rounded to S first: the bits of binary mul of g and
/// unary op of x (multiplication commutes), without the array in between.
template <class Op, class S>
struct UnaryMulBody {
  const S* x;
  const S* g;
  S* out;
  Op op;
  TENAX_HD void operator()(std::int64_t i) const {
    S fx;
    store(fx, op(load(x[i])));
    store(out[i], load(g[i]) * load(fx));
  }
};

template <class Op, class S>
struct BinaryBody {
  const S* a;
  const S* b;
  S* out;
  Op op;
  TENAX_HD void operator()(std::int64_t i) const { store(out[i], op(load(a[i]), load(b[i]))); }
};

/// t[i] *= inv_scale; returns 1 when the stored result is infinite or NaN, else 0. The backends
/// OR the results of all elements.
template <class S>
struct UnscaleCheckBody {
  S* t;
  compute_t<S> inv_scale;
  TENAX_HD int operator()(std::int64_t i) const {
    S stored;
    store(stored, load(t[i]) * inv_scale);
    t[i] = stored;
    return is_nonfinite(load(stored)) ? 1 : 0;
  }
};

/// unscale_and_measure: t[i] *= inv_scale (when `write`; otherwise t is only read) and the terms
/// of element i: the square of the stored result widened to double (the term of ops::dot(t, t)
/// and ops::nrm2), and 1 when that result is infinite or NaN, else 0.
struct MeasureTerms {
  double square;
  double nonfinite;
};
template <class S>
struct UnscaleMeasureBody {
  S* t;
  compute_t<S> inv_scale;
  bool write;
  TENAX_HD MeasureTerms operator()(std::int64_t i) const {
    return write ? terms<true>(i) : terms<false>(i);
  }
  /// With `write` as a constant, for loops that must not branch per element.
  template <bool kWrite>
  TENAX_HD MeasureTerms terms(std::int64_t i) const {
    S stored = t[i];
    if constexpr (kWrite) {
      store(stored, load(stored) * inv_scale);
      t[i] = stored;
    }
    const double v = static_cast<double>(load(stored));
    return {v * v, is_nonfinite(v) ? 1.0 : 0.0};
  }
};

/// NaN and non-finite tests of a stored value. The 16-bit types are classified from their bits
/// (exponent field all ones: infinity when the mantissa is zero, NaN otherwise), which is what
/// widening to float and testing says, without the conversion: anomaly mode scans every op's
/// output, and a widening per element would make the scan of f16/bf16 tensors cost more than
/// the op.
TENAX_HD inline bool stored_is_nan(float v) { return v != v; }
TENAX_HD inline bool stored_is_nan(double v) { return v != v; }
TENAX_HD inline bool stored_is_nan(Half v) {
  return (v.bits & 0x7C00u) == 0x7C00u && (v.bits & 0x03FFu) != 0;
}
TENAX_HD inline bool stored_is_nan(BFloat16 v) {
  return (v.bits & 0x7F80u) == 0x7F80u && (v.bits & 0x007Fu) != 0;
}
TENAX_HD inline bool stored_is_nonfinite(float v) { return is_nonfinite(v); }
TENAX_HD inline bool stored_is_nonfinite(double v) { return is_nonfinite(v); }
TENAX_HD inline bool stored_is_nonfinite(Half v) { return (v.bits & 0x7C00u) == 0x7C00u; }
TENAX_HD inline bool stored_is_nonfinite(BFloat16 v) { return (v.bits & 0x7F80u) == 0x7F80u; }

/// find_nonfinite: 0 for a finite element, 1 for a NaN, 2 for an infinity.
template <class S>
struct NonfiniteKindMap {
  const S* x;
  TENAX_HD int operator()(std::int64_t i) const {
    return stored_is_nan(x[i]) ? 1 : (stored_is_nonfinite(x[i]) ? 2 : 0);
  }
};

/// t[i] = low + (high - low) * u_i with u_i uniform in [0, 1) from Philox (philox.hpp), in t's
/// compute type: uniform_f64 for f64, uniform_f32 for the others.
template <class S>
struct UniformBody {
  S* t;
  std::uint64_t seed;
  std::uint64_t offset;
  compute_t<S> low;
  compute_t<S> width;
  TENAX_HD void operator()(std::int64_t i) const {
    const auto k = static_cast<std::uint64_t>(i);
    if constexpr (sizeof(compute_t<S>) == sizeof(double)) {
      store(t[i], low + width * uniform_f64(seed, offset, k));
    } else {
      store(t[i], low + width * uniform_f32(seed, offset, k));
    }
  }
};

/// t[i] = mean + stddev * z_i with z_i standard normal from Philox (Box-Muller, philox.hpp).
template <class S>
struct NormalBody {
  S* t;
  std::uint64_t seed;
  std::uint64_t offset;
  compute_t<S> mean;
  compute_t<S> stddev;
  TENAX_HD void operator()(std::int64_t i) const {
    const auto k = static_cast<std::uint64_t>(i);
    if constexpr (sizeof(compute_t<S>) == sizeof(double)) {
      store(t[i], scale_normal(normal_f64(seed, offset, k), mean, stddev));
    } else {
      store(t[i], scale_normal(normal_f32(seed, offset, k), mean, stddev));
    }
  }
};

}  // namespace tenax::kernels
