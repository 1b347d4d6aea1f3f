// Reductions (sum, dot, nrm2, max) written once for every backend (backend_test.hpp): exact
// small cases, the documented fixed order bit for bit (the same bits on every backend), agreement
// with a plain long double sum, empty tensors and non-finite values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/documented_order.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::reduce_cases {

using testing::bits;
using testing::documented_sum;
using testing::make_tensor;
using testing::values_of;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// n values of magnitude 2^-10 .. 2^10 (finite in f16 too), deterministic in the seed.
inline std::vector<double> random_values(std::int64_t n, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(n));
  // Magnitudes within 2^-10 .. 2^10: finite in f16 too.
  for (double& x : v) x = dist(engine) * std::exp2(static_cast<int>(dist(engine) * 10));
  return v;
}

class ReduceKernels : public testing::BackendTest {};

TEST_P(ReduceKernels, ExactSmallCasesInEveryDtype) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = put(make_tensor({1, 2, 3, 4, -2}, dtype));
    const Tensor y = put(make_tensor({2, 0.5, -1, 1, 1}, dtype));
    EXPECT_EQ(ops::sum(x), 8.0) << to_string(dtype);
    EXPECT_EQ(ops::dot(x, y), 2.0) << to_string(dtype);
    EXPECT_EQ(ops::nrm2(put(make_tensor({3, 4}, dtype))), 5.0) << to_string(dtype);
    EXPECT_EQ(ops::max(x), 4.0) << to_string(dtype);
    EXPECT_EQ(ops::max(put(make_tensor({-7, -3, -5}, dtype))), -3.0) << to_string(dtype);
  }
}

TEST_P(ReduceKernels, SumOfARampIsExact) {
  const std::int64_t n = 1'000'003;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(i);
  const double expected = static_cast<double>(n) * (n - 1) / 2;
  EXPECT_EQ(ops::sum(put(make_tensor(v, DType::f64))), expected);
  EXPECT_EQ(ops::sum(put(make_tensor(v, DType::f32))), expected);  // integers below 2^24
}

TEST_P(ReduceKernels, FollowsTheDocumentedOrderBitForBit) {
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{255}, std::int64_t{4096}, std::int64_t{4097},
                         std::int64_t{3 * 4096 + 1000}, std::int64_t{200'000}}) {
    const std::vector<double> v = random_values(n, static_cast<unsigned>(n));
    EXPECT_EQ(bits(ops::sum(put(make_tensor(v, DType::f64)))), bits(documented_sum(v))) << n;
    std::vector<double> squares(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) squares[i] = v[i] * v[i];
    EXPECT_EQ(bits(ops::nrm2(put(make_tensor(v, DType::f64)))),
              bits(std::sqrt(documented_sum(squares))))
        << n;
  }
}

TEST_P(ReduceKernels, AgreesWithAPlainLongDoubleSum) {
  const std::int64_t n = 1'000'000;
  const std::vector<double> v = random_values(n, 3);
  const std::vector<double> w = random_values(n, 4);
  for (DType dtype : kFloatDTypes) {
    const Tensor x = put(make_tensor(v, dtype));
    const Tensor y = put(make_tensor(w, dtype));
    const std::vector<double> xs = values_of(x), ys = values_of(y);
    long double s = 0;
    long double d = 0;
    long double q = 0;
    long double a = 0;  // sum of |terms|, the scale of the rounding error
    double m = -kInf;
    for (std::int64_t i = 0; i < n; ++i) {
      const long double xi = xs[static_cast<std::size_t>(i)];
      const long double yi = ys[static_cast<std::size_t>(i)];
      s += xi;
      d += xi * yi;
      q += xi * xi;
      a += std::fabs(xi) + std::fabs(xi * yi);
      m = std::max(m, static_cast<double>(xi));
    }
    const double tolerance = 1e-13 * static_cast<double>(a);
    EXPECT_NEAR(ops::sum(x), static_cast<double>(s), tolerance) << to_string(dtype);
    EXPECT_NEAR(ops::dot(x, y), static_cast<double>(d), tolerance) << to_string(dtype);
    EXPECT_NEAR(ops::nrm2(x), std::sqrt(static_cast<double>(q)),
                1e-13 * std::sqrt(static_cast<double>(q)))
        << to_string(dtype);
    EXPECT_EQ(ops::max(x), m) << to_string(dtype);
  }
}

TEST_P(ReduceKernels, EmptyTensorsAndNonFiniteValues) {
  const Tensor empty = Tensor::empty({0}, DType::f32, device());
  EXPECT_EQ(ops::sum(empty), 0.0);
  EXPECT_EQ(ops::dot(empty, empty), 0.0);
  EXPECT_EQ(ops::nrm2(empty), 0.0);
  EXPECT_THROW((void)ops::max(empty), UsageError);

  std::vector<double> v(100'000, 1.0);
  v[70'000] = kNaN;
  EXPECT_TRUE(std::isnan(ops::max(put(make_tensor(v, DType::f32)))));
  EXPECT_TRUE(std::isnan(ops::sum(put(make_tensor(v, DType::bf16)))));
  v[70'000] = kInf;
  EXPECT_EQ(ops::max(put(make_tensor(v, DType::f16))), kInf);
  EXPECT_EQ(ops::sum(put(make_tensor(v, DType::f64))), kInf);
  EXPECT_EQ(ops::max(put(make_tensor({-kInf, -kInf}, DType::f32))), -kInf);
  // f16 values square and add in f64: no overflow at f16's largest value.
  EXPECT_EQ(ops::nrm2(put(make_tensor({65504, 65504, 65504, 65504}, DType::f16))), 131008.0);
}

// Vectors whose sum of squares leaves the normal range of a double still get their norm: tiny
// ones are not 0 (b = 1e-300 taken for converged), huge finite ones not inf; zeros stay 0 and a
// NaN or inf element still gives NaN or inf. Around the threshold both forms agree closely.
TEST_P(ReduceKernels, Nrm2OfTinyAndHugeVectorsIsAccurate) {
  const double root2 = std::sqrt(2.0);
  for (const double v : {1e-300, 1e-200, 3e-160, 1e200, 1e300}) {
    const double got = ops::nrm2(put(make_tensor({v, -v, 0.0, v, v}, DType::f64)));
    EXPECT_NEAR(got, 2.0 * v, 4e-16 * 2.0 * v) << v;
  }
  EXPECT_NEAR(ops::nrm2(put(make_tensor({1e-300, 1e-300}, DType::f64))), root2 * 1e-300, 1e-315);
  EXPECT_EQ(ops::nrm2(put(make_tensor({0.0, -0.0, 0.0}, DType::f64))), 0.0);
  EXPECT_TRUE(std::isnan(ops::nrm2(put(make_tensor({1e-300, kNaN}, DType::f64)))));
  EXPECT_EQ(ops::nrm2(put(make_tensor({1e300, kInf}, DType::f64))), kInf);
  // f32's smallest subnormals square to about 2e-90 in f64: the plain form, still normal.
  EXPECT_GT(ops::nrm2(put(make_tensor({1e-45, 1e-45}, DType::f32))), 0.0);
  const double at_threshold = 0x1p-511;
  EXPECT_NEAR(ops::nrm2(put(make_tensor({at_threshold, at_threshold}, DType::f64))),
              root2 * at_threshold, 1e-15 * at_threshold);
}

}  // namespace tenax::reduce_cases
