// The CUDA backend of erf, gelu and gelu_grad against the CPU backend, the reference. Both
// evaluate the same expression (elementwise_bodies.hpp) but with their own math libraries (erf,
// erfc, exp), so the results agree within a few units in the last place, not bit for bit; f16 and
// bf16 within one rounding step of the narrow type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using testing::make_tensor;
using testing::significand_digits;
using testing::uniform_values;
using testing::values_of;

// Not a multiple of the CUDA grid, and large enough for a grid-stride loop.
constexpr std::int64_t kSize = 1'000'003;

using ActivationGpu = testing::GpuTest;

TEST_F(ActivationGpu, AgreeWithTheCpuWithinAFewUlps) {
  std::vector<double> values = uniform_values(kSize, 4, -8.0, 8.0);
  values[0] = INFINITY;
  values[1] = -INFINITY;
  values[2] = NAN;
  values[3] = -0.0;
  values[4] = -40.0;
  for (DType dtype : kFloatDTypes) {
    const Tensor x = make_tensor(values, dtype);
    const Tensor gx = x.to(gpu());
    for (ops::UnaryOp op : {ops::UnaryOp::erf, ops::UnaryOp::gelu, ops::UnaryOp::gelu_grad}) {
      const std::string what =
          std::string(ops::to_string(op)) + " " + std::string(to_string(dtype));
      const std::vector<double> a = values_of(ops::unary(op, x));
      const std::vector<double> b = values_of(ops::unary(op, gx));
      const std::vector<double> in = values_of(x);
      const int digits = significand_digits(dtype);
      const bool narrow = dtype == DType::f16 || dtype == DType::bf16;
      // Results in the subnormal range are held to a few steps of the smallest subnormal.
      double smallest_subnormal = 4.9406564584124654e-324;
      if (dtype == DType::f32) smallest_subnormal = 1.4012984643248171e-45;
      if (dtype == DType::f16) smallest_subnormal = 5.9604644775390625e-08;
      if (dtype == DType::bf16) smallest_subnormal = 9.1835496157991212e-41;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) {
          ASSERT_TRUE(std::isnan(a[i]) && std::isnan(b[i])) << what << " at " << i;
          continue;
        }
        // An infinite result, or any result of an infinite input (gelu_grad(inf) = 1, where the
        // tolerance below would be inf * 0), is exact on both backends.
        if (std::isinf(a[i]) || std::isinf(b[i]) || !std::isfinite(in[i])) {
          ASSERT_EQ(a[i], b[i]) << what << " of " << in[i] << " at " << i;
          continue;
        }
        // Errors scale with the terms (gelu_grad = Phi(x) + x phi(x) cancels near x = -0.75)
        // and with the x^2 amplification of Phi's argument; one narrow rounding step for f16/bf16.
        const double v = in[i];
        const double terms = op == ops::UnaryOp::gelu_grad
                                 ? 0.5 * std::erfc(-v / std::sqrt(2.0)) +
                                       std::fabs(v) * std::exp(-0.5 * v * v) / 2.5066282746310002
                                 : std::fabs(a[i]);
        const double scale = std::max(terms, 1e-300);
        const double ulps = narrow ? 1.0 : 8.0 + 2.0 * v * v;
        const double tolerance = ulps * std::ldexp(scale, -digits + 1) +
                                 (narrow ? 8.0 * std::ldexp(scale, -24) : 0.0) +
                                 4.0 * smallest_subnormal;
        ASSERT_NEAR(a[i], b[i], tolerance) << what << " of " << in[i] << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tenax
