// The element-wise, fill, copy/cast, random and check ops written once for every backend
// (backend_test.hpp): exact values against references computed here (f64 for f64, f32 then
// rounded for the narrower dtypes, the double result rounded once for exp, tanh and sigmoid as
// float_math.hpp promises), every 16-bit pattern through casts, NaN and infinity handling, and
// the counter-based random values of the Philox state.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/half.hpp"
#include "tenax/core/philox.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::elementwise_cases {

using testing::make_tensor;
using testing::round_to;
using testing::values_of;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Large enough that the CPU backend splits the work over several threads.
inline constexpr std::int64_t kLarge = 300'001;

// Equal values, or both NaN; zeros must also agree in sign.
inline ::testing::AssertionResult same_value(double expected, double actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (expected == actual && std::signbit(expected) == std::signbit(actual)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "expected " << expected << ", got " << actual;
}

inline std::vector<double> ramp(std::int64_t n, double start, double step) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + step * i;
  return v;
}

template <class T>
inline T apply(ops::UnaryOp op, T v) {
  switch (op) {
    case ops::UnaryOp::neg:
      return -v;
    case ops::UnaryOp::abs:
      return std::fabs(v);
    case ops::UnaryOp::exp:
      return std::exp(v);
    case ops::UnaryOp::log:
      return std::log(v);
    case ops::UnaryOp::sqrt:
      return std::sqrt(v);
    case ops::UnaryOp::tanh:
      return std::tanh(v);
    case ops::UnaryOp::relu:
      return v < T(0) ? T(0) : v;
    case ops::UnaryOp::sigmoid:
      return T(1) / (T(1) + std::exp(-v));
    case ops::UnaryOp::square:
      return v * v;
    case ops::UnaryOp::step:
      return v > T(0) ? T(1) : (std::isnan(v) ? v : T(0));
  }
  return v;
}

template <class T>
inline T apply(ops::BinaryOp op, T a, T b) {
  switch (op) {
    case ops::BinaryOp::add:
      return a + b;
    case ops::BinaryOp::sub:
      return a - b;
    case ops::BinaryOp::mul:
      return a * b;
    case ops::BinaryOp::div:
      return a / b;
    case ops::BinaryOp::maximum:
      return (std::isnan(a) || a > b) ? a : b;
    case ops::BinaryOp::minimum:
      return (std::isnan(a) || a < b) ? a : b;
  }
  return a;
}

// The reference: computed in f64 for f64, in f32 (then rounded) for the other dtypes.
inline double reference(ops::UnaryOp op, DType dtype, double v) {
  if (dtype == DType::f64) return apply<double>(op, v);
  const float x = static_cast<float>(v);
  if (op == ops::UnaryOp::exp || op == ops::UnaryOp::tanh || op == ops::UnaryOp::sigmoid) {
    // float_math.hpp: the double result rounded once to float (the correctly rounded value).
    return round_to(dtype, static_cast<float>(apply<double>(op, static_cast<double>(x))));
  }
  return round_to(dtype, apply<float>(op, x));
}
inline double reference(ops::BinaryOp op, DType dtype, double a, double b) {
  if (dtype == DType::f64) return apply<double>(op, a, b);
  return round_to(dtype, apply<float>(op, static_cast<float>(a), static_cast<float>(b)));
}

inline constexpr ops::UnaryOp kUnaryOps[] = {
    ops::UnaryOp::neg,    ops::UnaryOp::abs,  ops::UnaryOp::exp,  ops::UnaryOp::log,
    ops::UnaryOp::sqrt,   ops::UnaryOp::tanh, ops::UnaryOp::relu, ops::UnaryOp::sigmoid,
    ops::UnaryOp::square, ops::UnaryOp::step};
inline constexpr ops::BinaryOp kBinaryOps[] = {ops::BinaryOp::add,     ops::BinaryOp::sub,
                                               ops::BinaryOp::mul,     ops::BinaryOp::div,
                                               ops::BinaryOp::maximum, ops::BinaryOp::minimum};

class ElementwiseKernels : public testing::BackendTest {};

TEST_P(ElementwiseKernels, FillEveryDtypeHoldsTheRoundedValue) {
  for (DType dtype : kAllDTypes) {
    Tensor t = Tensor::empty({kLarge}, dtype, device());
    const double value = is_floating(dtype) ? 0.1 : 7.0;
    ops::fill(t, value);
    for (std::int64_t i : {std::int64_t{0}, kLarge / 2, kLarge - 1}) {
      EXPECT_TRUE(same_value(round_to(dtype, value), value_at(t, i)))
          << to_string(dtype) << " " << i;
    }
  }
  Tensor h = Tensor::empty({3}, DType::f16, device());
  ops::fill(h, 1.0);
  EXPECT_EQ(bits16_at(h, 2), 0x3C00);
  Tensor b = Tensor::empty({3}, DType::bf16, device());
  ops::fill(b, -2.0);
  EXPECT_EQ(bits16_at(b, 1), 0xC000);
}

TEST_P(ElementwiseKernels, FillRejectsValuesAnIntegerDtypeCannotHold) {
  Tensor t = Tensor::empty({4}, DType::i32, device());
  EXPECT_THROW(ops::fill(t, 0.5), UsageError);
  EXPECT_THROW(ops::fill(t, 1e10), UsageError);
  Tensor u = Tensor::empty({4}, DType::u8, device());
  EXPECT_THROW(ops::fill(u, -1.0), UsageError);
  ops::fill(u, 255.0);
  EXPECT_EQ(value_at(u, 3), 255.0);
}

TEST_P(ElementwiseKernels, CopyCopiesIntoAViewAndChecksDtype) {
  Tensor src = put(make_tensor({1, 2, 3, 4}, DType::f32));
  Tensor dst = Tensor::empty({4, 2}, DType::f32, device());
  ops::fill(dst, 0.0);
  ops::copy(dst.slice(1, 3).reshape({4}), src);
  EXPECT_EQ(values_of(dst), (std::vector<double>{0, 0, 1, 2, 3, 4, 0, 0}));
  EXPECT_THROW(ops::copy(Tensor::empty({4}, DType::f64, device()), src), UsageError);
  EXPECT_THROW(ops::copy(Tensor::empty({5}, DType::f32, device()), src), UsageError);
}

TEST_P(ElementwiseKernels, CastEveryPairOfFloatDtypesRoundsTheValues) {
  const std::vector<double> values = {0.0,     -0.0,    1.0,  -2.5, 0.1,   1.0 / 3.0,
                                      65504.0, 70000.0, 1e-6, 3e38, -kInf, kNaN};
  for (DType from : kFloatDTypes) {
    const Tensor src = put(make_tensor(values, from));
    for (DType to : kFloatDTypes) {
      const Tensor dst = ops::cast(src, to);
      EXPECT_EQ(dst.dtype(), to);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double expected = round_to(to, round_to(from, values[i]));
        EXPECT_TRUE(same_value(expected, value_at(dst, static_cast<std::int64_t>(i))))
            << to_string(from) << " -> " << to_string(to) << " of " << values[i];
      }
    }
  }
}

// Every 16-bit pattern survives f16 -> f32 -> f16 and f16 -> f64 -> f16 (and the same for bf16),
// except signalling NaNs, which come back quiet.
TEST_P(ElementwiseKernels, CastSixteenBitPatternsRoundTrip) {
  for (DType narrow : {DType::f16, DType::bf16}) {
    Tensor host_bits = Tensor::empty({65536}, narrow);
    auto* raw = static_cast<std::uint16_t*>(host_bits.data());
    for (std::uint32_t p = 0; p < 65536; ++p) raw[p] = static_cast<std::uint16_t>(p);
    const Tensor bits = put(host_bits);
    for (DType wide : {DType::f32, DType::f64}) {
      const Tensor back = ops::cast(ops::cast(bits, wide), narrow).to(Device::cpu());
      const auto* out = static_cast<const std::uint16_t*>(back.data());
      const std::uint16_t quiet = narrow == DType::f16 ? 0x0200 : 0x0040;
      const std::uint16_t exponent = narrow == DType::f16 ? 0x7C00 : 0x7F80;
      for (std::uint32_t p = 0; p < 65536; ++p) {
        const bool nan = (p & exponent) == exponent && (p & ~(exponent | 0x8000u)) != 0;
        const std::uint32_t expected = nan ? (p | quiet) : p;
        ASSERT_EQ(out[p], expected) << to_string(narrow) << " via " << to_string(wide) << " " << p;
      }
    }
  }
}

TEST_P(ElementwiseKernels, CastIntoAnExistingTensorAndRejectsIntegers) {
  Tensor src = put(make_tensor(ramp(kLarge, -1000.0, 0.01), DType::f64));
  Tensor dst = Tensor::empty({kLarge}, DType::bf16, device());
  ops::cast_into(dst, src);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{12345}, kLarge - 1}) {
    EXPECT_TRUE(same_value(round_to(DType::bf16, value_at(src, i)), value_at(dst, i)));
  }
  EXPECT_THROW((void)ops::cast(src, DType::i32), UsageError);
  EXPECT_THROW(ops::cast_into(Tensor::empty({kLarge}, DType::i64, device()), src), UsageError);
  EXPECT_THROW(ops::cast_into(Tensor::empty({3}, DType::f32, device()), src), UsageError);
}

TEST_P(ElementwiseKernels, AxpbyEveryDtypeIsExactOnSmallIntegers) {
  for (DType dtype : kFloatDTypes) {
    Tensor x = put(make_tensor(ramp(kLarge, -100.0, 1.0 / 1024), dtype));
    Tensor y = put(make_tensor(ramp(kLarge, 3.0, 0.0), dtype));
    ops::axpby(2.0, x, -0.5, y);
    for (std::int64_t i : {std::int64_t{0}, std::int64_t{77}, kLarge - 1}) {
      const double expected = round_to(dtype, 2.0 * value_at(x, i) - 1.5);
      EXPECT_TRUE(same_value(expected, value_at(y, i))) << to_string(dtype) << " " << i;
    }
  }
}

TEST_P(ElementwiseKernels, AxpbyWithZeroBetaIgnoresNaNInY) {
  Tensor x = put(make_tensor({1, 2, 3}, DType::f32));
  Tensor y = put(make_tensor({kNaN, kInf, 5}, DType::f32));
  ops::axpby(3.0, x, 0.0, y);
  EXPECT_EQ(values_of(y), (std::vector<double>{3, 6, 9}));
}

TEST_P(ElementwiseKernels, ScaleEveryDtypeInPlace) {
  for (DType dtype : kFloatDTypes) {
    Tensor x = put(make_tensor({1, -2, 0.5, 0}, dtype));
    ops::scale(-4.0, x);
    const std::vector<double> got = values_of(x);
    EXPECT_TRUE(same_value(-4.0, got[0]));
    EXPECT_TRUE(same_value(8.0, got[1]));
    EXPECT_TRUE(same_value(-2.0, got[2]));
    EXPECT_TRUE(same_value(-0.0, got[3]));
  }
}

TEST_P(ElementwiseKernels, UnaryEveryOpAndDtypeMatchesTheReference) {
  const std::vector<double> values = {-3.5, -1.0, -0.25, -0.0, 0.0,   0.5, 1.0,
                                      2.0,  7.75, 100.0, kInf, -kInf, kNaN};
  for (DType dtype : kFloatDTypes) {
    const Tensor x = put(make_tensor(values, dtype));
    for (ops::UnaryOp op : kUnaryOps) {
      const Tensor y = ops::unary(op, x);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double input = value_at(x, static_cast<std::int64_t>(i));
        EXPECT_TRUE(
            same_value(reference(op, dtype, input), value_at(y, static_cast<std::int64_t>(i))))
            << ops::to_string(op) << " " << to_string(dtype) << " of " << input;
      }
    }
  }
}

// A 16-bit array large enough for the CPU's lookup tables gives, for every op and every bit
// pattern (NaNs, infinities, subnormals and both zeros among them), the bits of the same patterns
// computed in arrays too small for a table; in place too.
TEST_P(ElementwiseKernels, UnaryOverEverySixteenBitPatternHasTheBitsOfSmallArrays) {
  constexpr std::int64_t kPatterns = 65536;
  constexpr std::int64_t kPiece = 4096;
  for (DType narrow : {DType::f16, DType::bf16}) {
    Tensor host_bits = Tensor::empty({kPatterns}, narrow);
    auto* raw = static_cast<std::uint16_t*>(host_bits.data());
    for (std::int64_t p = 0; p < kPatterns; ++p) raw[p] = static_cast<std::uint16_t>(p);
    const Tensor all = put(host_bits);
    for (int code = 0; code <= static_cast<int>(ops::UnaryOp::gelu_tanh_grad); ++code) {
      const auto op = static_cast<ops::UnaryOp>(code);
      const Tensor whole = ops::unary(op, all).to(Device::cpu());
      Tensor in_place = put(host_bits).clone();  // a copy: on the CPU put() shares the storage
      ops::unary_into(op, in_place, in_place);
      const Tensor in_place_host = in_place.to(Device::cpu());
      const auto* whole_bits = static_cast<const std::uint16_t*>(whole.data());
      const auto* in_place_bits = static_cast<const std::uint16_t*>(in_place_host.data());
      for (std::int64_t start = 0; start < kPatterns; start += kPiece) {
        Tensor host_piece = Tensor::empty({kPiece}, narrow);
        auto* piece_raw = static_cast<std::uint16_t*>(host_piece.data());
        for (std::int64_t i = 0; i < kPiece; ++i) {
          piece_raw[i] = static_cast<std::uint16_t>(start + i);
        }
        const Tensor piece = ops::unary(op, put(host_piece)).to(Device::cpu());
        const auto* piece_bits = static_cast<const std::uint16_t*>(piece.data());
        for (std::int64_t i = 0; i < kPiece; ++i) {
          ASSERT_EQ(whole_bits[start + i], piece_bits[i])
              << ops::to_string(op) << " " << to_string(narrow) << " of pattern " << start + i;
          ASSERT_EQ(in_place_bits[start + i], piece_bits[i])
              << ops::to_string(op) << " in place, " << to_string(narrow) << " of pattern "
              << start + i;
        }
      }
    }
  }
}

// unary_mul has the bits of mul(g, unary(op, x)) for every op and dtype, at sizes below and above
// the CPU's 16-bit tables, in place into x and into g; mismatched operands are refused.
TEST_P(ElementwiseKernels, UnaryMulHasTheBitsOfMulOfUnary) {
  for (DType dtype : kFloatDTypes) {
    for (std::int64_t n : {std::int64_t{13}, kLarge}) {
      const Tensor x = put(make_tensor(ramp(n, -12.0, 24.0 / static_cast<double>(n)), dtype));
      const Tensor g = put(make_tensor(ramp(n, 3.0, -6.0 / static_cast<double>(n)), dtype));
      for (int code = 0; code <= static_cast<int>(ops::UnaryOp::gelu_tanh_grad); ++code) {
        const auto op = static_cast<ops::UnaryOp>(code);
        const std::string what =
            std::string(ops::to_string(op)) + " " + std::string(to_string(dtype));
        const Tensor want = ops::mul(g, ops::unary(op, x)).to(Device::cpu());
        const Tensor got = ops::unary_mul(op, x, g).to(Device::cpu());
        ASSERT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0) << what;
        Tensor into_x = x.clone();
        ops::unary_mul_into(op, into_x, g, into_x);
        ASSERT_EQ(std::memcmp(want.data(), into_x.to(Device::cpu()).data(), want.nbytes()), 0)
            << what << " in place into x";
        Tensor into_g = g.clone();
        ops::unary_mul_into(op, x, into_g, into_g);
        ASSERT_EQ(std::memcmp(want.data(), into_g.to(Device::cpu()).data(), want.nbytes()), 0)
            << what << " in place into g";
      }
    }
  }
  const Tensor x = put(make_tensor({1, 2, 3}, DType::f32));
  EXPECT_THROW(
      (void)ops::unary_mul(ops::UnaryOp::gelu_grad, x, put(make_tensor({1, 2}, DType::f32))),
      UsageError);
  EXPECT_THROW(
      (void)ops::unary_mul(ops::UnaryOp::gelu_grad, x, put(make_tensor({1, 2, 3}, DType::f64))),
      UsageError);
  EXPECT_THROW((void)ops::unary_mul(static_cast<ops::UnaryOp>(200), x, x), UsageError);
}

TEST_P(ElementwiseKernels, UnaryNamedOpsLargeTensorsAndInPlace) {
  const Tensor x = put(make_tensor(ramp(kLarge, -20.0, 1e-4), DType::f32));
  const Tensor y = ops::sigmoid(x);
  for (std::int64_t i : {std::int64_t{0}, kLarge / 3, kLarge - 1}) {
    EXPECT_TRUE(
        same_value(reference(ops::UnaryOp::sigmoid, DType::f32, value_at(x, i)), value_at(y, i)));
  }
  EXPECT_EQ(values_of(ops::relu(put(make_tensor({-1, 2}, DType::f64)))),
            (std::vector<double>{0, 2}));
  EXPECT_EQ(values_of(ops::square(put(make_tensor({-3}, DType::f16)))), (std::vector<double>{9}));
  EXPECT_EQ(values_of(ops::sqrt(put(make_tensor({16}, DType::bf16)))), (std::vector<double>{4}));
  EXPECT_EQ(values_of(ops::neg(put(make_tensor({1}, DType::f32)))), (std::vector<double>{-1}));
  EXPECT_EQ(values_of(ops::abs(put(make_tensor({-1}, DType::f32)))), (std::vector<double>{1}));
  EXPECT_EQ(values_of(ops::exp(put(make_tensor({0}, DType::f32)))), (std::vector<double>{1}));
  EXPECT_EQ(values_of(ops::log(put(make_tensor({1}, DType::f32)))), (std::vector<double>{0}));
  EXPECT_EQ(values_of(ops::tanh(put(make_tensor({0}, DType::f32)))), (std::vector<double>{0}));
  Tensor z = put(make_tensor({-2, 3}, DType::f32));
  ops::unary_into(ops::UnaryOp::abs, z, z);
  EXPECT_EQ(values_of(z), (std::vector<double>{2, 3}));
}

// An element-wise out may be an input itself (in place) but not a shifted view of one, which
// would read elements already written: refused, naming both, for every op with an out; the
// tensors keep their bytes.
TEST_P(ElementwiseKernels, PartialOverlapsAreRefusedInPlaceIsNot) {
  const std::int64_t n = 70000;  // past the 16-bit table size too
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const Tensor buffer = random({n + 1}, dtype, 3);
    const Tensor before = buffer.to(Device::cpu());
    const Tensor x = buffer.slice(0, n), shifted = buffer.slice(1, n + 1);
    const Tensor g = random({n}, dtype, 4);
    const auto refused = [&](const std::function<void()>& call, const char* op) {
      testing::expect_contains(testing::usage_error(call), {op, "overlaps", "without being it"});
    };
    refused([&] { ops::unary_into(ops::UnaryOp::gelu, x, shifted); }, "gelu");
    refused([&] { ops::unary_mul_into(ops::UnaryOp::gelu_grad, x, g, shifted); }, "unary_mul");
    refused([&] { ops::unary_mul_into(ops::UnaryOp::gelu_grad, g, x, shifted); }, "unary_mul");
    refused([&] { ops::binary_into(ops::BinaryOp::add, x, g, shifted); }, "add");
    refused([&] { ops::axpby(1.0, x, 1.0, shifted); }, "axpby");
    refused([&] { ops::copy(shifted, x); }, "copy");
    refused([&] { ops::cast_into(shifted, x); }, "cast_into");
    EXPECT_TRUE(same(buffer, before)) << "a refused op wrote";
    // In place is allowed, and gives the out-of-place bits.
    const Tensor want = ops::unary_mul(ops::UnaryOp::gelu_grad, x, g);
    ops::unary_mul_into(ops::UnaryOp::gelu_grad, x, g, x);
    EXPECT_TRUE(same(x, want)) << to_string(dtype);
  }
}

TEST_P(ElementwiseKernels, BinaryEveryOpAndDtypeMatchesTheReference) {
  const std::vector<double> a = {1.0, -2.0, 0.5, 3.0, 0.0, kNaN, 1.0, -kInf, 7.0};
  const std::vector<double> b = {3.0, 0.25, -0.5, 3.0, 0.0, 1.0, kNaN, 2.0, 1e-3};
  for (DType dtype : kFloatDTypes) {
    const Tensor ta = put(make_tensor(a, dtype));
    const Tensor tb = put(make_tensor(b, dtype));
    for (ops::BinaryOp op : kBinaryOps) {
      const Tensor out = ops::binary(op, ta, tb);
      for (std::size_t i = 0; i < a.size(); ++i) {
        const auto k = static_cast<std::int64_t>(i);
        EXPECT_TRUE(
            same_value(reference(op, dtype, value_at(ta, k), value_at(tb, k)), value_at(out, k)))
            << ops::to_string(op) << " " << to_string(dtype) << " at " << i;
      }
    }
  }
}

TEST_P(ElementwiseKernels, BinaryNamedOpsAndNaNPropagation) {
  const Tensor a = put(make_tensor({1, kNaN, 4}, DType::f32));
  const Tensor b = put(make_tensor({2, 0, kNaN}, DType::f32));
  const std::vector<double> hi = values_of(ops::maximum(a, b));
  const std::vector<double> lo = values_of(ops::minimum(a, b));
  EXPECT_EQ(hi[0], 2.0);
  EXPECT_EQ(lo[0], 1.0);
  for (int i : {1, 2}) {
    EXPECT_TRUE(std::isnan(hi[static_cast<std::size_t>(i)]));
    EXPECT_TRUE(std::isnan(lo[static_cast<std::size_t>(i)]));
  }
  const Tensor x = put(make_tensor({6, 1}, DType::f64));
  const Tensor y = put(make_tensor({2, 4}, DType::f64));
  EXPECT_EQ(values_of(ops::add(x, y)), (std::vector<double>{8, 5}));
  EXPECT_EQ(values_of(ops::sub(x, y)), (std::vector<double>{4, -3}));
  EXPECT_EQ(values_of(ops::mul(x, y)), (std::vector<double>{12, 4}));
  EXPECT_EQ(values_of(ops::div(x, y)), (std::vector<double>{3, 0.25}));
  Tensor out = Tensor::empty({2}, DType::f64, device());
  ops::binary_into(ops::BinaryOp::add, x, y, out);
  EXPECT_EQ(values_of(out), (std::vector<double>{8, 5}));
}

TEST_P(ElementwiseKernels, UnscaleAndCheckFindsOneNaNAnywhere) {
  for (DType dtype : kFloatDTypes) {
    for (std::int64_t where : {std::int64_t{0}, kLarge / 2, kLarge - 1}) {
      Tensor t = put(make_tensor(ramp(kLarge, 1.0, 0.0), dtype));
      set_at(t, where, kNaN);
      EXPECT_TRUE(ops::unscale_and_check(t, 1024.0)) << to_string(dtype) << " at " << where;
      EXPECT_TRUE(std::isnan(value_at(t, where)));
      EXPECT_EQ(value_at(t, where == 0 ? 1 : 0), 1.0 / 1024);
    }
  }
}

TEST_P(ElementwiseKernels, UnscaleAndCheckFindsInfinitiesAndOverflowAndIsExactWhenFinite) {
  for (DType dtype : kFloatDTypes) {
    Tensor t = put(make_tensor(ramp(kLarge, -1000.0, 0.0078125), dtype));
    const std::vector<double> before = values_of(t);
    EXPECT_FALSE(ops::unscale_and_check(t, 65536.0)) << to_string(dtype);
    const std::vector<double> after = values_of(t);
    for (std::size_t i = 0; i < before.size(); i += 997) {
      ASSERT_EQ(after[i], before[i] / 65536.0) << to_string(dtype) << " " << i;
    }
    set_at(t, kLarge - 1, -kInf);
    EXPECT_TRUE(ops::unscale_and_check(t, 2.0)) << to_string(dtype);
  }
  // 100 / 2^-10 does not fit in f16: the stored result is infinite.
  Tensor h = put(make_tensor({1.0, 100.0}, DType::f16));
  EXPECT_TRUE(ops::unscale_and_check(h, 1.0 / 1024));
  EXPECT_EQ(value_at(h, 0), 1024.0);
  EXPECT_THROW((void)ops::unscale_and_check(h, 0.0), UsageError);
  EXPECT_THROW((void)ops::unscale_and_check(h, kNaN), UsageError);
}

TEST_P(ElementwiseKernels, CountNonfiniteCountsInfinitiesAndNaNs) {
  for (DType dtype : kFloatDTypes) {
    Tensor t = put(make_tensor(ramp(kLarge, 0.0, 1.0 / 64), dtype));
    EXPECT_EQ(ops::count_nonfinite(t), 0);
    set_at(t, 0, kNaN);
    set_at(t, 5000, kInf);
    set_at(t, kLarge - 1, -kInf);
    set_at(t, kLarge - 2, kNaN);
    EXPECT_EQ(ops::count_nonfinite(t), 4) << to_string(dtype);
  }
  // Finite values beyond f16's range round to infinity when stored.
  EXPECT_EQ(ops::count_nonfinite(put(make_tensor({65504, 70000, -1e6}, DType::f16))), 2);
  EXPECT_EQ(ops::count_nonfinite(Tensor::empty({0}, DType::f32, device())), 0);
}

TEST_P(ElementwiseKernels, RandomValueIIsThePhiloxValueOfTheState) {
  constexpr std::uint64_t kSeed = 42;
  constexpr std::uint64_t kOffset = 7;
  Tensor f = Tensor::empty({kLarge}, DType::f32, device());
  Tensor d = Tensor::empty({kLarge}, DType::f64, device());
  Tensor h = Tensor::empty({kLarge}, DType::f16, device());
  ops::random_uniform(f, kSeed, kOffset);
  ops::random_uniform(d, kSeed, kOffset);
  ops::random_uniform(h, kSeed, kOffset);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, kLarge - 1}) {
    const auto k = static_cast<std::uint64_t>(i);
    EXPECT_EQ(value_at(f, i), uniform_f32(kSeed, kOffset, k));
    EXPECT_EQ(value_at(d, i), uniform_f64(kSeed, kOffset, k));
    EXPECT_EQ(value_at(h, i), round_to(DType::f16, uniform_f32(kSeed, kOffset, k)));
  }
  ops::random_normal(f, kSeed, kOffset, 1.0, 2.0);
  ops::random_normal(d, kSeed, kOffset, 1.0, 2.0);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, kLarge - 1}) {
    const auto k = static_cast<std::uint64_t>(i);
    EXPECT_EQ(value_at(f, i), scale_normal(normal_f32(kSeed, kOffset, k), 1.0f, 2.0f));
    EXPECT_EQ(value_at(d, i), scale_normal(normal_f64(kSeed, kOffset, k), 1.0, 2.0));
  }
}

TEST_P(ElementwiseKernels, RandomStatisticsRangeAndOffsets) {
  Tensor t = Tensor::empty({kLarge}, DType::f64, device());
  ops::random_uniform(t, 1, 0, -2.0, 6.0);
  const std::vector<double> u = values_of(t);
  double mean = 0.0;
  for (double v : u) {
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 6.0);
    mean += v;
  }
  EXPECT_NEAR(mean / kLarge, 2.0, 0.05);
  ops::random_normal(t, 1, 0, 3.0, 0.5);
  const std::vector<double> z = values_of(t);
  double m = 0.0;
  double m2 = 0.0;
  for (double v : z) {
    m += v;
    m2 += v * v;
  }
  m /= kLarge;
  EXPECT_NEAR(m, 3.0, 0.01);
  EXPECT_NEAR(std::sqrt(m2 / kLarge - m * m), 0.5, 0.01);

  // A draw at offset + 1 continues a draw at offset four values later.
  Tensor a = Tensor::empty({12}, DType::f32, device());
  Tensor b = Tensor::empty({8}, DType::f32, device());
  ops::random_normal(a, 9, 100);
  ops::random_normal(b, 9, 101);
  for (std::int64_t i = 0; i < 8; ++i) EXPECT_EQ(value_at(a, i + 4), value_at(b, i));
  EXPECT_THROW(ops::random_uniform(a, 0, 0, 1.0, 0.0), UsageError);
  EXPECT_THROW(ops::random_normal(a, 0, 0, 0.0, -1.0), UsageError);
  EXPECT_THROW(ops::random_uniform(Tensor::empty({2}, DType::i32, device()), 0, 0), UsageError);
}

}  // namespace tenax::elementwise_cases
