// The checked front end of the element-wise, copy/cast, random, reduction and check ops: validate
// the operands, then run the kernel of the tensors' device.
#include "tenax/kernels/ops_elementwise.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "tenax/core/context.hpp"
#include "tenax/core/copy.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::ops {

// The kernel `name` of the backend that owns `device`.
#define TENAX_RUN_KERNEL(device, name, ...)                     \
  ((device).is_cpu() ? ::tenax::kernels::cpu::name(__VA_ARGS__) \
                     : ::tenax::kernels::cuda::name(__VA_ARGS__))

namespace {

void check_float_operand(std::string_view op, std::string_view name, const Tensor& t) {
  detail::check_defined(op, name, t);
  detail::check_floating(op, name, t);
}

// Unary and binary ops and BLAS-1: defined, floating, same device, dtype and shape.
void check_float_pair(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b) {
  detail::check_compatible(op, a_name, a, b_name, b);
  detail::check_floating(op, a_name, a);
}

// Waits for queued CUDA work on `device`, before bytes move outside its context's stream.
void drain(Device device) {
  if (device.is_cuda()) tenax::cuda::context(device).synchronize();
}

bool is_integer(DType dtype) {
  return dtype == DType::i64 || dtype == DType::i32 || dtype == DType::u8;
}

void check_fill_value(const Tensor& t, double value) {
  if (!is_integer(t.dtype())) return;
  double low = 0.0;
  double high = 255.0;
  if (t.dtype() == DType::i32) {
    low = std::numeric_limits<std::int32_t>::min();
    high = std::numeric_limits<std::int32_t>::max();
  } else if (t.dtype() == DType::i64) {
    // The doubles that convert to an int64 without overflow.
    low = -9223372036854775808.0;
    high = 9223372036854774784.0;
  }
  TENAX_EXPECTS(
      std::trunc(value) == value && value >= low && value <= high, UsageError,
      "fill: value " + std::to_string(value) + " is not representable in t, " + t.describe(),
      "pass a whole number in the range of " + std::string(to_string(t.dtype())));
}

}  // namespace

const char* to_string(UnaryOp op) noexcept {
  switch (op) {
    case UnaryOp::neg:
      return "neg";
    case UnaryOp::abs:
      return "abs";
    case UnaryOp::exp:
      return "exp";
    case UnaryOp::log:
      return "log";
    case UnaryOp::sqrt:
      return "sqrt";
    case UnaryOp::tanh:
      return "tanh";
    case UnaryOp::relu:
      return "relu";
    case UnaryOp::sigmoid:
      return "sigmoid";
    case UnaryOp::square:
      return "square";
    case UnaryOp::step:
      return "step";
    case UnaryOp::erf:
      return "erf";
    case UnaryOp::gelu:
      return "gelu";
    case UnaryOp::gelu_grad:
      return "gelu_grad";
    case UnaryOp::gelu_tanh:
      return "gelu_tanh";
    case UnaryOp::gelu_tanh_grad:
      return "gelu_tanh_grad";
  }
  return "unknown UnaryOp";
}

const char* to_string(BinaryOp op) noexcept {
  switch (op) {
    case BinaryOp::add:
      return "add";
    case BinaryOp::sub:
      return "sub";
    case BinaryOp::mul:
      return "mul";
    case BinaryOp::div:
      return "div";
    case BinaryOp::maximum:
      return "maximum";
    case BinaryOp::minimum:
      return "minimum";
  }
  return "unknown BinaryOp";
}

void fill(const Tensor& t, double value) {
  detail::check_defined("fill", "t", t);
  check_fill_value(t, value);
  if (t.numel() == 0) return;
  TENAX_RUN_KERNEL(t.device(), fill, t, value);
}

void random_uniform(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double low,
                    double high) {
  check_float_operand("random_uniform", "t", t);
  detail::check_finite("random_uniform", "low", low);
  detail::check_finite("random_uniform", "high", high);
  TENAX_EXPECTS(low <= high, UsageError,
                "random_uniform: low (" + std::to_string(low) + ") is greater than high (" +
                    std::to_string(high) + ")",
                "pass low <= high");
  if (t.numel() == 0) return;
  TENAX_RUN_KERNEL(t.device(), random_uniform, t, seed, offset, low, high);
}

void random_normal(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double mean,
                   double stddev) {
  check_float_operand("random_normal", "t", t);
  detail::check_finite("random_normal", "mean", mean);
  detail::check_finite("random_normal", "stddev", stddev);
  TENAX_EXPECTS(stddev >= 0.0, UsageError,
                "random_normal: stddev is " + std::to_string(stddev) + " but must be >= 0",
                "pass a non-negative standard deviation");
  if (t.numel() == 0) return;
  TENAX_RUN_KERNEL(t.device(), random_normal, t, seed, offset, mean, stddev);
}

void copy(const Tensor& dst, const Tensor& src) {
  detail::check_defined("copy", "dst", dst);
  detail::check_defined("copy", "src", src);
  TENAX_EXPECTS(dst.dtype() == src.dtype(), UsageError,
                "copy: dst is " + dst.describe() + " but src is " + src.describe(),
                "use ops::cast_into(dst, src) to convert between dtypes");
  detail::check_same_shape("copy", "dst", dst, "src", src);
  detail::check_alias("copy", "dst", dst, "src", src);
  if (dst.numel() == 0 || (dst.device() == src.device() && dst.data() == src.data())) return;
  if (dst.device() == src.device() && dst.device().is_cuda() && is_floating(dst.dtype())) {
    // A same-dtype cast is a copy kernel, ordered on the stream like every other op.
    kernels::cuda::cast(dst, src);
    return;
  }
  drain(src.device());
  if (dst.device() != src.device()) drain(dst.device());
  copy_bytes(dst.data(), dst.device(), src.data(), src.device(), dst.nbytes());
}

Tensor cast(const Tensor& src, DType dtype) {
  check_float_operand("cast", "src", src);
  TENAX_EXPECTS(
      is_floating(dtype), UsageError,
      "cast: target dtype " + std::string(to_string(dtype)) + " is not a floating-point dtype",
      "cast to f64, f32, f16 or bf16");
  Tensor out = Tensor::empty(src.shape(), dtype, src.device());
  if (src.numel() > 0) TENAX_RUN_KERNEL(src.device(), cast, out, src);
  return out;
}

void cast_into(const Tensor& dst, const Tensor& src) {
  check_float_operand("cast_into", "dst", dst);
  check_float_operand("cast_into", "src", src);
  detail::check_same_shape("cast_into", "dst", dst, "src", src);
  detail::check_alias("cast_into", "dst", dst, "src", src);
  if (dst.numel() == 0) return;
  if (dst.device() == src.device()) {
    TENAX_RUN_KERNEL(dst.device(), cast, dst, src);
  } else if (size_of(dst.dtype()) <= size_of(src.dtype())) {
    copy(dst, cast(src, dst.dtype()));  // narrow first, then move the smaller array
  } else {
    Tensor moved = Tensor::empty(src.shape(), src.dtype(), dst.device());
    copy(moved, src);
    TENAX_RUN_KERNEL(dst.device(), cast, dst, moved);
  }
}

void axpby(double a, const Tensor& x, double b, const Tensor& y) {
  check_float_pair("axpby", "x", x, "y", y);
  detail::check_alias("axpby", "y", y, "x", x);
  if (y.numel() == 0) return;
  TENAX_RUN_KERNEL(y.device(), axpby, a, x, b, y);
}

void scale(double a, const Tensor& x) {
  check_float_operand("scale", "x", x);
  if (x.numel() == 0) return;
  TENAX_RUN_KERNEL(x.device(), scale, a, x);
}

double dot(const Tensor& x, const Tensor& y) {
  check_float_pair("dot", "x", x, "y", y);
  return TENAX_RUN_KERNEL(x.device(), dot, x, y);
}

double nrm2(const Tensor& x) {
  check_float_operand("nrm2", "x", x);
  const double norm = TENAX_RUN_KERNEL(x.device(), nrm2, x);
  // The squares are summed unscaled (dot's rule and bits). Where the sum left the normal range
  // of a double -- a norm below 2^-511 has lost digits to underflow or become 0 for a non-zero
  // x; inf may be the overflow of finite elements -- the norm is formed again from x scaled by
  // a power of two (exact), so that a tiny or huge vector is not taken for 0 or inf. Inside a
  // ShardedReductionScope max and nrm2 are global, so every rank takes this path alike.
  if (std::isnan(norm) || (norm >= 0x1p-511 && norm <= std::numeric_limits<double>::max())) {
    return norm;
  }
  const kernels::ShardedReductionScope* scope = kernels::ShardedReductionScope::active();
  if ((scope != nullptr ? scope->range().total : x.numel()) == 0) return norm;  // no elements
  const Tensor wide = Tensor::empty(x.shape(), DType::f64, x.device());
  cast_into(wide, x);
  unary_into(UnaryOp::abs, wide, wide);
  const double largest = max(wide);
  if (largest == 0.0 || !std::isfinite(largest)) return largest == 0.0 ? 0.0 : norm;
  int exponent = 0;
  (void)std::frexp(largest, &exponent);  // largest = f * 2^exponent, 0.5 <= f < 1
  scale(std::ldexp(1.0, -exponent), wide);
  return std::ldexp(TENAX_RUN_KERNEL(x.device(), nrm2, wide), exponent);
}

double sum(const Tensor& x) {
  check_float_operand("sum", "x", x);
  return TENAX_RUN_KERNEL(x.device(), sum, x);
}

double max(const Tensor& x) {
  check_float_operand("max", "x", x);
  if (const kernels::ShardedReductionScope* scope = kernels::ShardedReductionScope::active()) {
    // A rank's shard may be empty; the distributed vector may not.
    TENAX_EXPECTS(scope->range().total > 0, UsageError,
                  "max: the distributed vector has no elements, so the result is undefined",
                  "pass a vector with at least one element");
    if (x.numel() == 0) {
      return kernels::empty_reduction<1, kernels::MaxCombine>().v[0];
    }
  } else {
    detail::check_not_empty("max", "x", x);
  }
  return TENAX_RUN_KERNEL(x.device(), max, x);
}

Tensor unary(UnaryOp op, const Tensor& x) {
  check_float_operand(to_string(op), "x", x);
  Tensor out = Tensor::empty_like(x);
  unary_into(op, x, out);
  return out;
}

void unary_into(UnaryOp op, const Tensor& x, const Tensor& out) {
  check_float_pair(to_string(op), "x", x, "out", out);
  detail::check_alias(to_string(op), "out", out, "x", x);
  if (x.numel() == 0) return;
  TENAX_RUN_KERNEL(x.device(), unary, op, x, out);
}

Tensor unary_mul(UnaryOp op, const Tensor& x, const Tensor& g) {
  check_float_pair("unary_mul", "x", x, "g", g);
  Tensor out = Tensor::empty_like(x);
  unary_mul_into(op, x, g, out);
  return out;
}

void unary_mul_into(UnaryOp op, const Tensor& x, const Tensor& g, const Tensor& out) {
  check_float_pair("unary_mul", "x", x, "g", g);
  check_float_pair("unary_mul", "x", x, "out", out);
  detail::check_alias("unary_mul", "out", out, "x", x);
  detail::check_alias("unary_mul", "out", out, "g", g);
  if (x.numel() == 0) return;
  TENAX_RUN_KERNEL(x.device(), unary_mul, op, x, g, out);
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  check_float_pair(to_string(op), "a", a, "b", b);
  Tensor out = Tensor::empty_like(a);
  binary_into(op, a, b, out);
  return out;
}

void binary_into(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_float_pair(to_string(op), "a", a, "b", b);
  check_float_pair(to_string(op), "a", a, "out", out);
  detail::check_alias(to_string(op), "out", out, "a", a);
  detail::check_alias(to_string(op), "out", out, "b", b);
  if (a.numel() == 0) return;
  TENAX_RUN_KERNEL(a.device(), binary, op, a, b, out);
}

bool unscale_and_check(const Tensor& t, double scale) {
  check_float_operand("unscale_and_check", "t", t);
  detail::check_positive("unscale_and_check", "scale", scale);
  if (t.numel() == 0) return false;
  return TENAX_RUN_KERNEL(t.device(), unscale_and_check, t, 1.0 / scale);
}

std::int64_t count_nonfinite(const Tensor& t) {
  check_float_operand("count_nonfinite", "t", t);
  if (t.numel() == 0) return static_cast<std::int64_t>(kernels::empty_reduction<1>().v[0]);
  return TENAX_RUN_KERNEL(t.device(), count_nonfinite, t);
}

NonfiniteReport find_nonfinite(const Tensor& t) {
  check_float_operand("find_nonfinite", "t", t);
  if (t.numel() == 0) return {};
  return TENAX_RUN_KERNEL(t.device(), find_nonfinite, t);
}

UnscaleReport unscale_and_measure(const Tensor& t, double scale) {
  check_float_operand("unscale_and_measure", "t", t);
  detail::check_positive("unscale_and_measure", "scale", scale);
  if (t.numel() == 0) return {};
  return TENAX_RUN_KERNEL(t.device(), unscale_and_measure, t, 1.0 / scale);
}

#undef TENAX_RUN_KERNEL

}  // namespace tenax::ops
