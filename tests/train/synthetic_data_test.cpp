// The synthetic sets of synthetic_data.hpp: shapes and kinds, the same samples for a seed (and
// other ones for another seed), the noiseless regression targets equal to the formula, the
// spirals' classes alternating and their points on the spirals, and the refusals.
#include "tenax/train/synthetic_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>

#include "kernels/usage_error.hpp"

namespace tenax::train {
namespace {

using tenax::testing::expect_contains;
using tenax::testing::usage_error;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(SyntheticData, RegressionIsTheFormulaPlusNoiseForASeed) {
  const ArrayData clean = regression_data(500, 0.0, 7);
  ASSERT_EQ(clean.x.shape(), (Shape{500, 2}));
  ASSERT_EQ(clean.y.shape(), (Shape{500, 1}));
  EXPECT_FALSE(clean.classification());
  const float* x = clean.x.data_as<const float>();
  const float* y = clean.y.data_as<const float>();
  for (std::int64_t i = 0; i < 500; ++i) {
    const double a = x[2 * i];
    const double b = x[2 * i + 1];
    ASSERT_LE(std::fabs(a), 1.0);
    ASSERT_LE(std::fabs(b), 1.0);
    const auto want = static_cast<float>(
        std::sin(std::numbers::pi * a) * std::cos(std::numbers::pi * b) + 0.5 * a * b);
    ASSERT_EQ(y[i], want) << "sample " << i;
  }
  const ArrayData noisy = regression_data(500, 0.1, 7);
  EXPECT_TRUE(same_bits(noisy.x, clean.x)) << "the noise draws from its own stream";
  EXPECT_FALSE(same_bits(noisy.y, clean.y));
  EXPECT_TRUE(same_bits(regression_data(500, 0.1, 7).y, noisy.y)) << "the same seed";
  EXPECT_FALSE(same_bits(regression_data(500, 0.1, 8).x, noisy.x)) << "another seed";
}

TEST(SyntheticData, SpiralsAlternateTheirTwoClassesOnTheSpirals) {
  const ArrayData d = spirals_data(400, 0.0, 3);
  ASSERT_EQ(d.x.shape(), (Shape{400, 2}));
  ASSERT_EQ(d.y.shape(), (Shape{400}));
  EXPECT_EQ(d.classes, 2);
  const float* x = d.x.data_as<const float>();
  const std::int64_t* y = d.y.data_as<const std::int64_t>();
  for (std::int64_t i = 0; i < 400; ++i) {
    ASSERT_EQ(y[i], i % 2);
    const double r = std::hypot(x[2 * i], x[2 * i + 1]);
    ASSERT_GE(r, 0.05 - 1e-6);
    ASSERT_LT(r, 1.0 + 1e-6);
    // Without noise a point sits on its class's spiral: angle 3 pi r + class pi (mod 2 pi).
    const double angle = 3.0 * std::numbers::pi * r + static_cast<double>(i % 2) * std::numbers::pi;
    ASSERT_NEAR(x[2 * i], r * std::cos(angle), 1e-5) << "sample " << i;
    ASSERT_NEAR(x[2 * i + 1], r * std::sin(angle), 1e-5) << "sample " << i;
  }
  EXPECT_TRUE(same_bits(spirals_data(400, 0.05, 3).x, spirals_data(400, 0.05, 3).x));
}

TEST(SyntheticData, BadSizesAndNoiseAreRefusedNamingTheValue) {
  expect_contains(usage_error([] { (void)regression_data(0, 0.1, 1); }),
                  {"regression_data: samples = 0", "at least one sample"});
  expect_contains(usage_error([] { (void)spirals_data(-5, 0.1, 1); }),
                  {"spirals_data: samples = -5"});
  expect_contains(usage_error([] { (void)spirals_data(10, -0.1, 1); }),
                  {"spirals_data: noise = -0.1", "non-negative"});
  expect_contains(usage_error([] { (void)regression_data(10, std::nan(""), 1); }),
                  {"regression_data: noise = nan"});
}

}  // namespace
}  // namespace tenax::train
