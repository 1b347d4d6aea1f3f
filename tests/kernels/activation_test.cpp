// erf, gelu and gelu_grad (ops_elementwise.hpp) on the CPU backend, the reference for the CUDA
// backend: values against std::erf-based references in every floating dtype, and gelu_grad
// against central differences of gelu.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using testing::get_value;
using testing::make_tensor;
using testing::round_to;
using testing::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Reference values in long double (64 significant bits on x86) from std::erf, well below a
// double's ulp. Phi(x) = (1 + erf(x / sqrt 2)) / 2 cancels for negative x, so there the reference
// takes the same function from the erf family as erfc(-x / sqrt 2) / 2.
long double ref_erf(long double x) { return std::erf(x); }
long double ref_cdf(long double x) {
  const long double z = x / std::sqrt(2.0L);
  return x >= -1.0L ? 0.5L * (1.0L + std::erf(z)) : 0.5L * std::erfc(-z);
}
long double ref_pdf(long double x) {
  return std::exp(-0.5L * x * x) / std::sqrt(2.0L * 3.14159265358979323846264338327950288L);
}
long double ref_gelu(long double x) { return x * ref_cdf(x); }
long double ref_gelu_grad(long double x) { return ref_cdf(x) + x * ref_pdf(x); }

long double reference(ops::UnaryOp op, long double x) {
  switch (op) {
    case ops::UnaryOp::erf:
      return ref_erf(x);
    case ops::UnaryOp::gelu:
      return ref_gelu(x);
    default:
      return ref_gelu_grad(x);
  }
}

// Units in the last place of `dtype` at `value` (the spacing of the binade, at least the smallest
// normal's, so that results near zero are held to an absolute bound).
double ulp(DType dtype, double value) {
  int digits = 53;
  double tiny = 2.2250738585072014e-308;
  if (dtype == DType::f32) {
    digits = 24;
    tiny = 1.1754943508222875e-38;
  } else if (dtype == DType::f16) {
    digits = 11;
    tiny = 6.103515625e-05;
  } else if (dtype == DType::bf16) {
    digits = 8;
    tiny = 1.1754943508222875e-38;
  }
  const double magnitude = std::max(std::fabs(value), tiny);
  return std::ldexp(1.0, std::ilogb(magnitude) - digits + 1);
}

constexpr ops::UnaryOp kOps[] = {ops::UnaryOp::erf, ops::UnaryOp::gelu, ops::UnaryOp::gelu_grad};

std::vector<double> inputs() {
  std::vector<double> v;
  for (double x = -5.0; x <= 5.0; x += 0.0625) v.push_back(x);
  for (double x : {-0.0, 1e-3, -1e-3, 1e-20, 7.5, 12.0, 30.0}) v.push_back(x);
  return v;
}

TEST(Activation, NamesAreStable) {
  EXPECT_STREQ(ops::to_string(ops::UnaryOp::erf), "erf");
  EXPECT_STREQ(ops::to_string(ops::UnaryOp::gelu), "gelu");
  EXPECT_STREQ(ops::to_string(ops::UnaryOp::gelu_grad), "gelu_grad");
  // Appended after the existing enumerators: the old values are unchanged.
  EXPECT_EQ(static_cast<int>(ops::UnaryOp::step), 9);
  EXPECT_EQ(static_cast<int>(ops::UnaryOp::erf), 10);
  EXPECT_EQ(static_cast<int>(ops::UnaryOp::gelu), 11);
  EXPECT_EQ(static_cast<int>(ops::UnaryOp::gelu_grad), 12);
}

// f64 within a few ulps of the long double reference; f32 likewise in f32. f16 and bf16 compute
// in f32 and round once: within one rounding step of the dtype (plus the f32 error).
TEST(Activation, ValuesMatchTheErfReferenceInEveryDtype) {
  const std::vector<double> values = inputs();
  for (DType dtype : kFloatDTypes) {
    const Tensor x = make_tensor(values, dtype);
    for (ops::UnaryOp op : kOps) {
      const Tensor y = ops::unary(op, x);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const auto k = static_cast<std::int64_t>(i);
        const double input = get_value(x, k);
        const auto expected = static_cast<double>(reference(op, input));
        const double got = get_value(y, k);
        // Errors of the compute type scale with the terms, not the result: gelu_grad = Phi(x) +
        // x phi(x) cancels near x = -0.75.
        const bool narrow = dtype == DType::f16 || dtype == DType::bf16;
        const double terms =
            op == ops::UnaryOp::gelu_grad
                ? static_cast<double>(ref_cdf(input) + std::fabs(input) * ref_pdf(input))
                : expected;
        // In f64, Phi(x) amplifies the rounding of its argument x / sqrt 2 about x^2 times
        // (glibc's erfc adds a few ulps of its own). f32 compute takes gelu and gelu_grad in
        // double from float_math.hpp's functions and rounds once.
        const bool f32_compute = dtype != DType::f64;
        const double ulps = op == ops::UnaryOp::erf ? 4.0
                            : f32_compute           ? 1.0
                                                    : 8.0 + 2.0 * input * input;
        const double tolerance = narrow ? ulp(dtype, expected) + ulps * ulp(DType::f32, terms)
                                        : ulps * ulp(dtype, terms);
        EXPECT_NEAR(got, expected, tolerance)
            << ops::to_string(op) << " " << to_string(dtype) << " of " << input;
      }
    }
  }
}

// In f32, gelu is the correctly rounded value of the long double reference for all but a handful
// of inputs (Phi and the product taken in double, rounded once), and never more than one ulp off,
// subnormal results included; gelu_grad likewise, but for the one ulp of its terms (Phi(x) and
// x phi(x) cancel near x = -0.75). A sweep of four million floats over [-16, 16].
TEST(Activation, F32GeluIsCorrectlyRoundedOverASweep) {
  constexpr std::int64_t kCount = 4000000;
  std::vector<double> values(static_cast<std::size_t>(kCount));
  for (std::int64_t i = 0; i < kCount; ++i) {
    values[static_cast<std::size_t>(i)] = static_cast<float>(-16.0 + 32.0 * i / kCount);
  }
  const Tensor x = make_tensor(values, DType::f32);
  const std::vector<double> gelu = values_of(ops::gelu(x));
  const std::vector<double> grad = values_of(ops::gelu_grad(x));
  std::int64_t inexact = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const long double v = values[i];
    const auto want = static_cast<float>(ref_gelu(v));
    if (static_cast<float>(gelu[i]) != want) {
      ++inexact;
      ASSERT_LE(std::fabs(gelu[i] - want), ulp(DType::f32, want)) << "gelu of " << values[i];
    }
    const auto terms = static_cast<double>(ref_cdf(v) + std::fabs(v) * ref_pdf(v));
    ASSERT_LE(std::fabs(grad[i] - static_cast<double>(ref_gelu_grad(v))), ulp(DType::f32, terms))
        << "gelu_grad of " << values[i];
  }
  EXPECT_LT(inexact, kCount / 100000) << inexact << " of " << kCount << " gelu values inexact";
}

// erf is exactly the math library's erf of the compute type, rounded on store.
TEST(Activation, ErfIsTheLibraryErf) {
  const std::vector<double> values = inputs();
  for (DType dtype : kFloatDTypes) {
    const Tensor x = make_tensor(values, dtype);
    const std::vector<double> y = values_of(ops::erf(x));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double input = get_value(x, static_cast<std::int64_t>(i));
      const double expected = dtype == DType::f64
                                  ? std::erf(input)
                                  : round_to(dtype, std::erf(static_cast<float>(input)));
      EXPECT_EQ(y[i], expected) << to_string(dtype) << " of " << input;
    }
  }
}

// The erfc form keeps gelu accurate where 1 + erf(x / sqrt 2) cancels: the relative error stays
// at the x^2 ulps that the rounding of the argument x / sqrt 2 causes (1 + erf in f64 would lose
// every digit by x = -9).
TEST(Activation, GeluTailIsAccurate) {
  const std::vector<double> values = {-6.0, -8.0, -10.0, -15.0, -20.0, -30.0, -37.0};
  const std::vector<double> y = values_of(ops::gelu(make_tensor(values, DType::f64)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const long double x = values[i];
    const auto expected = static_cast<double>(x * 0.5L * std::erfc(-x / std::sqrt(2.0L)));
    EXPECT_NEAR(y[i], expected, (8.0 + 2.0 * values[i] * values[i]) * ulp(DType::f64, expected))
        << values[i];
    EXPECT_LT(y[i], 0.0) << values[i];
  }
}

TEST(Activation, SpecialValues) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = make_tensor({kInf, -kInf, kNaN, 0.0, -0.0, -1e6}, dtype);
    const std::vector<double> erf = values_of(ops::erf(x));
    const std::vector<double> gelu = values_of(ops::gelu(x));
    const std::vector<double> grad = values_of(ops::gelu_grad(x));
    const std::string name(to_string(dtype));
    EXPECT_EQ(erf[0], 1.0) << name;
    EXPECT_EQ(erf[1], -1.0) << name;
    EXPECT_TRUE(std::isnan(erf[2])) << name;
    EXPECT_EQ(gelu[0], kInf) << name;
    EXPECT_EQ(gelu[1], 0.0) << name;  // the limit, not -inf * 0 = NaN
    EXPECT_TRUE(std::signbit(gelu[1])) << name;
    EXPECT_TRUE(std::isnan(gelu[2])) << name;
    EXPECT_EQ(gelu[3], 0.0) << name;
    EXPECT_FALSE(std::signbit(gelu[3])) << name;
    EXPECT_TRUE(std::signbit(gelu[4])) << name;
    EXPECT_EQ(gelu[5], 0.0) << name;
    EXPECT_EQ(grad[0], 1.0) << name;
    EXPECT_EQ(grad[1], 0.0) << name;
    EXPECT_TRUE(std::isnan(grad[2])) << name;
    EXPECT_EQ(grad[3], 0.5) << name;
    EXPECT_EQ(grad[4], 0.5) << name;
    EXPECT_EQ(grad[5], 0.0) << name;
  }
}

// gelu_grad is the derivative of gelu: central differences of the f64 op agree to about
// h^2 * |gelu'''| / 6 plus the rounding noise eps * |gelu| / h.
TEST(Activation, GeluGradMatchesCentralDifferencesOfGelu) {
  constexpr double kH = 1e-5;
  std::vector<double> points;
  for (double x = -6.0; x <= 6.0; x += 0.03125) points.push_back(x);
  std::vector<double> plus;
  std::vector<double> minus;
  for (double x : points) {
    plus.push_back(x + kH);
    minus.push_back(x - kH);
  }
  const std::vector<double> grad = values_of(ops::gelu_grad(make_tensor(points, DType::f64)));
  const std::vector<double> up = values_of(ops::gelu(make_tensor(plus, DType::f64)));
  const std::vector<double> down = values_of(ops::gelu(make_tensor(minus, DType::f64)));
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double difference = (up[i] - down[i]) / (2.0 * kH);
    EXPECT_NEAR(grad[i], difference, 1e-9) << "at " << points[i];
  }
}

// The named helpers are the UnaryOp calls, and unary_into works in place.
TEST(Activation, NamedHelpersAndInPlace) {
  const Tensor x = make_tensor({-1.5, 0.25, 2.0}, DType::f32);
  for (ops::UnaryOp op : kOps) {
    const Tensor expected = ops::unary(op, x);
    Tensor named;
    if (op == ops::UnaryOp::erf) named = ops::erf(x);
    if (op == ops::UnaryOp::gelu) named = ops::gelu(x);
    if (op == ops::UnaryOp::gelu_grad) named = ops::gelu_grad(x);
    EXPECT_EQ(values_of(named), values_of(expected)) << ops::to_string(op);
    Tensor inplace = x.clone();
    ops::unary_into(op, inplace, inplace);
    EXPECT_EQ(values_of(inplace), values_of(expected)) << ops::to_string(op);
  }
}

}  // namespace
}  // namespace tenax
