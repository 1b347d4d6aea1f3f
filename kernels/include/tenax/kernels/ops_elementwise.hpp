/// Element-wise, copy/cast, random, reduction and mixed-precision-check ops.
/// @file
/// Every op checks its operands (defined, same device, same dtype, same shape, floating dtype)
/// and throws UsageError naming the op, the operands and the fix; then it runs the kernel of the
/// tensors' device. A CUDA tensor in a build without CUDA raises NotCompiledError.
///
/// Style: an op that makes a new tensor returns it (`Tensor add(a, b)`); its `_into` variant
/// writes into a caller-provided `out` of the right shape, dtype and device (out may be an input
/// itself, in place, but must not overlap one partially: UsageError). Ops that update a tensor
/// (fill, random_*, axpby, scale, unscale_and_check, unscale_and_measure) work in place. f16 and
/// bf16 are computed in f32 and rounded to nearest even on store. Broadcasting binary ops are in
/// ops_broadcast.hpp.
///
/// Reductions accumulate in f64 over fixed blocks of kReduceBlock elements combined in a fixed
/// tree order (reduction_order.hpp): the result does not depend on the thread count, and the CUDA
/// backend returns the same bits as the CPU backend. Inside a ShardedReductionScope, dot, nrm2,
/// sum, max and count_nonfinite return the global result over every rank's shard
/// (sharded_reduction.hpp).
///
/// Ops on the CPU use CpuContext::instance(); CUDA ops are ordered on the device context's stream
/// and return when their result is usable from the host (reductions) or enqueued (the others).
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// Functions of one element, for unary() and unary_into(). The CPU and CUDA backends give the
/// same bits for neg, abs, sqrt, relu, step and square, and in f32 compute (f32, f16 and bf16
/// tensors) for exp, tanh, sigmoid, gelu, gelu_grad, gelu_tanh and gelu_tanh_grad
/// (float_math.hpp); log and erf, and the transcendental ops on f64, use each backend's math
/// library (log, erf, erfc, exp, tanh), so the CPU and CUDA results agree within a few units in
/// the last place, not bit for bit. An element's result never depends on the array around it:
/// over f16 and bf16 the CPU looks large arrays up in a table of the op's own results (65536
/// entries, filled on first use), with the bits it would compute.
enum class UnaryOp : std::uint8_t {
  neg,      ///< -x
  abs,      ///< |x|
  exp,      ///< e^x
  log,      ///< natural logarithm (-inf at 0, NaN below)
  sqrt,     ///< square root (NaN below 0)
  tanh,     ///< hyperbolic tangent
  relu,     ///< max(x, 0); NaN stays NaN
  sigmoid,  ///< 1 / (1 + e^-x)
  square,   ///< x * x
  /// 1 where x > 0, 0 where x <= 0, NaN for NaN (the derivative of relu, a NaN kept visible).
  step,
  erf,  ///< the error function
  /// x Phi(x) with Phi the standard normal CDF: the exact (erf) form 0.5 x (1 + erf(x / sqrt 2))
  /// of PyTorch's approximate='none', not the tanh approximation. Evaluated as
  /// 0.5 x erfc(-x / sqrt 2), the same function without the cancellation of 1 + erf for negative
  /// x (so the tail stays accurate); where Phi underflows (x below about -38 in f64, -14 in f32)
  /// the result is -0, so gelu(-inf) = -0 and gelu(+inf) = +inf.
  gelu,
  /// The derivative of gelu, Phi(x) + x phi(x) with phi the standard normal density;
  /// gelu_grad(-inf) = 0, gelu_grad(+inf) = 1.
  gelu_grad,
  /// The tanh approximation of gelu (PyTorch's approximate='tanh', GPT-2's):
  /// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))); -0 where the tanh is -1 (so
  /// gelu_tanh(-inf) = -0), +inf at +inf.
  gelu_tanh,
  /// The derivative of gelu_tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 0.044715
  /// x^2) with t the tanh above; the second term is 0 where 1 - t^2 is (so 0 at -inf, 1 at +inf).
  gelu_tanh_grad
};
/// Functions of two elements, for binary(), binary_into() and the broadcasting ops. Each is one
/// IEEE operation or a selection, so every backend gives the same bits.
enum class BinaryOp : std::uint8_t {
  add,      ///< a + b
  sub,      ///< a - b
  mul,      ///< a * b
  div,      ///< a / b
  maximum,  ///< the larger of a and b; NaN when either is NaN
  minimum   ///< the smaller of a and b; NaN when either is NaN
};

/// The op's name as messages show it, e.g. "gelu_grad" ("unknown UnaryOp" outside the enum).
[[nodiscard]] const char* to_string(UnaryOp op) noexcept;
/// The op's name as messages show it, e.g. "maximum" ("unknown BinaryOp" outside the enum).
[[nodiscard]] const char* to_string(BinaryOp op) noexcept;

// ---- fill, random, copy, cast ----

/// Sets every element of t (any dtype) to `value`: rounded to a floating dtype (through f32 for
/// f16 and bf16); for an integer dtype (i64, i32, u8) the value must be a whole number in its
/// range (UsageError otherwise).
void fill(const Tensor& t, double value);

/// @name Random numbers
///@{

/// Counter-based random numbers (Philox4x32-10, philox.hpp) at generator state (seed, offset):
/// element i of t is value i of the draw, a pure function of (seed, offset, i), the same bits on
/// CPU and GPU. offset counts 128-bit Philox blocks: a draw of n values uses blocks
/// [offset, offset + ceil(n / 4)), so the next independent draw starts at offset + ceil(n / 4).
/// Floating dtypes only; f64 uses 53 random bits, the others f32 values (rounded on store).
/// Uniform: low + (high - low) * u with u in [0, 1) (rounding can give high itself for f16/bf16
/// or wide ranges). Normal: mean + stddev * z (Box-Muller). Throws UsageError for a non-finite
/// low, high, mean or stddev, low > high or stddev < 0.
void random_uniform(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double low = 0.0,
                    double high = 1.0);
void random_normal(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double mean = 0.0,
                   double stddev = 1.0);
///@}

/// Copies src into dst: same dtype (any dtype; cast_into converts) and shape, any two devices.
/// A copy that involves the host returns when dst holds the data (queued CUDA work on either
/// side is waited for first); a copy within one CUDA device is enqueued on its stream like the
/// other ops. Copying a tensor onto itself does nothing; dst and src otherwise share no memory
/// (UsageError).
void copy(const Tensor& dst, const Tensor& src);

/// src converted to `dtype` on src's device (a copy even when the dtype is unchanged).
/// Floating dtypes only; f64 -> f16/bf16 rounds through f32.
[[nodiscard]] Tensor cast(const Tensor& src, DType dtype);
/// Converts src into dst (same shape, any floating dtypes, any devices). Across devices the
/// narrower representation is the one transferred: a narrowing cast runs on src's device before
/// the copy, a widening cast on dst's device after it. dst is src itself (same dtype) or shares
/// no memory with it (UsageError).
void cast_into(const Tensor& dst, const Tensor& src);

// ---- BLAS-1 ----

/// y = a * x + b * y, in place, with a and b rounded to the compute type (f64, or f32 for f32,
/// f16 and bf16). When b == 0, y is not read (NaN or garbage in y does not matter). x may be y
/// itself; a partial overlap is a UsageError.
void axpby(double a, const Tensor& x, double b, const Tensor& y);
/// x = a * x, in place (a rounded to the compute type as in axpby).
void scale(double a, const Tensor& x);

// ---- reductions (result in f64; the inputs may be any floating dtype) ----

/// Sum of x[i] * y[i], each product formed in f64 from the widened elements, folded in the order
/// of reduction_order.hpp; 0 for empty tensors. x and y have one shape, dtype and device.
[[nodiscard]] double dot(const Tensor& x, const Tensor& y);
/// sqrt(sum of squares), the squares summed in f64 in dot's order (the bits of sqrt(dot(x, x))).
/// Where that sum leaves the normal range of a double -- a norm below 2^-511, or an infinite sum
/// of finite elements (f64 values beyond ~1e154) -- the norm is formed again from x scaled by a
/// power of two, so that it is accurate there too: a vector of 1e-300s is not taken for 0, nor
/// one of 1e300s for inf. NaN for an x holding NaN, inf for one holding inf.
[[nodiscard]] double nrm2(const Tensor& x);
/// Sum of the elements widened to f64, in the order of reduction_order.hpp; 0 for an empty
/// tensor.
[[nodiscard]] double sum(const Tensor& x);
/// Largest element; NaN when any element is NaN. Throws UsageError for an empty tensor (inside a
/// ShardedReductionScope: for an empty distributed vector; an empty shard is fine).
[[nodiscard]] double max(const Tensor& x);

// ---- element-wise ----

/// op applied to every element of x, into a new tensor like x (same shape, dtype and device).
[[nodiscard]] Tensor unary(UnaryOp op, const Tensor& x);
/// unary into `out`, which has x's shape, dtype and device and may be x itself.
void unary_into(UnaryOp op, const Tensor& x, const Tensor& out);
/// op(x) * g element by element, into a new tensor like x: the backward pass of an activation
/// (g the gradient of its output, op its derivative, e.g. UnaryOp::gelu_grad). The bits of
/// mul(g, unary(op, x)) (op's result rounded to the dtype, then the product), in one pass over
/// memory without the array between. x and g: same shape, dtype (floating) and device, else
/// UsageError.
[[nodiscard]] Tensor unary_mul(UnaryOp op, const Tensor& x, const Tensor& g);
/// unary_mul into `out`, which has x's shape, dtype and device and may be x or g itself.
void unary_mul_into(UnaryOp op, const Tensor& x, const Tensor& g, const Tensor& out);
/// op applied element by element to a and b (same shape, dtype and device; broadcast_binary
/// broadcasts), into a new tensor like a.
[[nodiscard]] Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
/// binary into `out`, which has a's shape, dtype and device and may be a or b itself.
void binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

/// @name Shorthands for unary and binary
///@{

/// unary(UnaryOp::NAME, x) or binary(BinaryOp::NAME, a, b) for the op of the same name (neg is
/// UnaryOp::neg, maximum is BinaryOp::maximum, ...); see UnaryOp and BinaryOp for each one.
[[nodiscard]] inline Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, x); }
[[nodiscard]] inline Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, x); }
[[nodiscard]] inline Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, x); }
[[nodiscard]] inline Tensor log(const Tensor& x) { return unary(UnaryOp::log, x); }
[[nodiscard]] inline Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, x); }
[[nodiscard]] inline Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, x); }
[[nodiscard]] inline Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x); }
[[nodiscard]] inline Tensor step(const Tensor& x) { return unary(UnaryOp::step, x); }
[[nodiscard]] inline Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x); }
[[nodiscard]] inline Tensor square(const Tensor& x) { return unary(UnaryOp::square, x); }
[[nodiscard]] inline Tensor erf(const Tensor& x) { return unary(UnaryOp::erf, x); }
[[nodiscard]] inline Tensor gelu(const Tensor& x) { return unary(UnaryOp::gelu, x); }
[[nodiscard]] inline Tensor gelu_grad(const Tensor& x) { return unary(UnaryOp::gelu_grad, x); }
[[nodiscard]] inline Tensor gelu_tanh(const Tensor& x) { return unary(UnaryOp::gelu_tanh, x); }
[[nodiscard]] inline Tensor gelu_tanh_grad(const Tensor& x) {
  return unary(UnaryOp::gelu_tanh_grad, x);
}

[[nodiscard]] inline Tensor add(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::add, a, b);
}
[[nodiscard]] inline Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::sub, a, b);
}
[[nodiscard]] inline Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::mul, a, b);
}
[[nodiscard]] inline Tensor div(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::div, a, b);
}
[[nodiscard]] inline Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::maximum, a, b);
}
[[nodiscard]] inline Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::minimum, a, b);
}
///@}

// ---- mixed-precision checks ----

/// Multiplies t in place by 1/scale and returns true when any element of the result (as stored
/// in t's dtype) is infinite or NaN. One pass over t. Used to unscale gradients under dynamic
/// loss scaling: `true` means skip the step and back off the scale. scale must be finite and > 0
/// (UsageError otherwise). 1/scale is rounded to t's compute type. On a CUDA device the call
/// waits for the result.
[[nodiscard]] bool unscale_and_check(const Tensor& t, double scale);
/// Number of infinite or NaN elements of t (0 for an empty t).
[[nodiscard]] std::int64_t count_nonfinite(const Tensor& t);

/// What find_nonfinite found in a tensor.
struct NonfiniteReport {
  std::int64_t nan_count = 0;     ///< elements that are NaN
  std::int64_t inf_count = 0;     ///< elements that are +inf or -inf
  std::int64_t first_index = -1;  ///< smallest flat index of either, -1 when there is none
  double first_value = 0;  ///< that element as stored, widened (NaN, +inf or -inf); 0 when none
};
/// Where the NaNs and infinities of t are: counts of each, and the smallest flat (row-major) index
/// holding either, with its value as stored (NaN, +inf or -inf, widened to double). first_index
/// is -1 and first_value 0 when every element is finite (and for an empty t). One read pass; t is
/// not changed. The result is the same on every backend and for every thread count, and stays
/// local inside a ShardedReductionScope. Used by anomaly detection to say which element of which
/// tensor went bad first.
[[nodiscard]] NonfiniteReport find_nonfinite(const Tensor& t);

/// What unscale_and_measure returns.
struct UnscaleReport {
  /// The number of stored results that are infinite or NaN.
  std::int64_t nonfinite_count = 0;
  /// The sum of the squares of the stored results, each widened to double and squared in double,
  /// accumulated in the fixed blocked order of ops::dot and ops::nrm2: it equals ops::dot(t, t)
  /// on the unscaled t bit for bit, and sqrt(sum_of_squares) equals ops::nrm2(t). It is inf or
  /// NaN when nonfinite_count > 0 (and may overflow to inf for huge finite f64 values).
  double sum_of_squares = 0;
};
/// The fused pass of dynamic loss scaling: unscale, finite check and gradient norm in one read and
/// one write of t. Multiplies t in place by 1/scale exactly as unscale_and_check does (1/scale is
/// rounded to t's compute type: f64, or f32 for f32/f16/bf16; when scale == 1, t is only read),
/// and reports the results (see UnscaleReport). The bits are the same on every backend and for
/// every thread count; the result stays local inside a ShardedReductionScope. scale must be
/// finite and > 0 (UsageError otherwise). On a CUDA device the call waits for the result.
[[nodiscard]] UnscaleReport unscale_and_measure(const Tensor& t, double scale);

}  // namespace tenax::ops
