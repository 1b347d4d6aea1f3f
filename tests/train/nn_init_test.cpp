// nn::init: fans as PyTorch computes them, the bounds and standard deviations of the Kaiming and
// Xavier initialisers checked statistically, the Philox offsets they return, and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/nn/init.hpp"

namespace tenax::train::nn {
namespace {

using testing::expect_contains;
using testing::usage_error;
using testing::values_of;

struct Moments {
  double mean = 0.0;
  double variance = 0.0;
  double min = 0.0;
  double max = 0.0;
};

Moments moments(const Tensor& t) {
  const std::vector<double> v = values_of(t);
  Moments m;
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  for (const double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (const double x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size() - 1);
  return m;
}

// 2^17 samples: the sample standard deviation is within 1% of the true one with overwhelming
// probability (its relative standard error is about 1 / sqrt(2 n) = 0.2%), and the mean within
// 5 standard errors of 0.
constexpr std::int64_t kOut = 512;
constexpr std::int64_t kIn = 256;

void expect_uniform(const Tensor& w, double bound) {
  const Moments m = moments(w);
  // The bounds are rounded to the dtype (f32 here or there), hence the relative slack.
  EXPECT_GE(m.min, -bound * (1 + 1e-6));
  EXPECT_LE(m.max, bound * (1 + 1e-6));
  EXPECT_GT(m.max, 0.99 * bound) << "the range is used";
  EXPECT_LT(m.min, -0.99 * bound);
  const double stddev = bound / std::sqrt(3.0);
  EXPECT_NEAR(std::sqrt(m.variance), stddev, 0.01 * stddev);
  EXPECT_NEAR(m.mean, 0.0, 5.0 * stddev / std::sqrt(static_cast<double>(w.numel())));
}

void expect_normal(const Tensor& w, double stddev) {
  const Moments m = moments(w);
  EXPECT_NEAR(std::sqrt(m.variance), stddev, 0.01 * stddev);
  EXPECT_NEAR(m.mean, 0.0, 5.0 * stddev / std::sqrt(static_cast<double>(w.numel())));
  EXPECT_GT(m.max, 3.0 * stddev) << "tails are present";
}

TEST(NnInit, FansFollowPyTorch) {
  EXPECT_EQ(fan_in(Tensor::empty({3, 5}, DType::f32)), 5);
  EXPECT_EQ(fan_out(Tensor::empty({3, 5}, DType::f32)), 3);
  const Tensor conv = Tensor::empty({8, 4, 3, 3}, DType::f32);
  EXPECT_EQ(fan_in(conv), 36);
  EXPECT_EQ(fan_out(conv), 72);
  EXPECT_DOUBLE_EQ(leaky_relu_gain(0.0), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(leaky_relu_gain(std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_EQ(kLinearKaimingA, std::sqrt(5.0));
}

TEST(NnInit, KaimingUniformDefaultIsNnLinearsBound) {
  for (const DType dtype : {DType::f32, DType::f64}) {
    const Tensor w = Tensor::empty({kOut, kIn}, dtype);
    EXPECT_EQ(kaiming_uniform(w, 7, 100), static_cast<std::uint64_t>(100 + kOut * kIn / 4));
    // gain sqrt(1/3) times sqrt(3 / fan_in) = 1 / sqrt(fan_in)
    expect_uniform(w, 1.0 / std::sqrt(static_cast<double>(kIn)));
  }
}

TEST(NnInit, KaimingUniformWithAAndFanOut) {
  const Tensor w = Tensor::empty({kOut, kIn}, DType::f32);
  (void)kaiming_uniform(w, 1, 0, 0.0, FanMode::fan_out);
  expect_uniform(w, std::sqrt(2.0) * std::sqrt(3.0 / static_cast<double>(kOut)));
}

TEST(NnInit, KaimingNormalStd) {
  const Tensor w = Tensor::empty({kOut, kIn}, DType::f64);
  EXPECT_EQ(kaiming_normal(w, 2, 0), static_cast<std::uint64_t>(kOut * kIn / 4));
  expect_normal(w, std::sqrt(2.0 / static_cast<double>(kIn)));
  (void)kaiming_normal(w, 2, 0, 1.0, FanMode::fan_out);
  expect_normal(w, 1.0 / std::sqrt(static_cast<double>(kOut)));
}

TEST(NnInit, XavierBoundsAndStd) {
  const Tensor w = Tensor::empty({kOut, kIn}, DType::f32);
  const double fans = static_cast<double>(kOut + kIn);
  (void)xavier_uniform(w, 3, 0);
  expect_uniform(w, std::sqrt(6.0 / fans));
  (void)xavier_uniform(w, 3, 0, 5.0 / 3.0);
  expect_uniform(w, 5.0 / 3.0 * std::sqrt(6.0 / fans));
  (void)xavier_normal(w, 4, 0);
  expect_normal(w, std::sqrt(2.0 / fans));
  (void)xavier_normal(w, 4, 0, 0.5);
  expect_normal(w, 0.5 * std::sqrt(2.0 / fans));
}

TEST(NnInit, ReturnsTheNextFreeOffset) {
  EXPECT_EQ(philox_blocks(0), 0u);
  EXPECT_EQ(philox_blocks(1), 1u);
  EXPECT_EQ(philox_blocks(4), 1u);
  EXPECT_EQ(philox_blocks(10), 3u);
  const Tensor w = Tensor::empty({5, 2}, DType::f32);
  EXPECT_EQ(xavier_uniform(w, 1, 40), 43u);
  EXPECT_EQ(kaiming_normal(w, 1, 40), 43u);
  EXPECT_EQ(uniform(Tensor::empty({9}, DType::f64), 1, 5, -1, 1), 8u);
  EXPECT_EQ(kaiming_uniform(Tensor::empty({0, 3}, DType::f32), 1, 5), 5u) << "empty: no draw";
  // Two draws chained by the returned offset are one longer draw: they share no random numbers.
  const Tensor a = Tensor::empty({8}, DType::f64);
  const Tensor b = Tensor::empty({4}, DType::f64);
  const Tensor both = Tensor::empty({12}, DType::f64);
  const std::uint64_t next = uniform(a, 9, 0, 0.0, 1.0);
  (void)uniform(b, 9, next, 0.0, 1.0);
  (void)uniform(both, 9, 0, 0.0, 1.0);
  std::vector<double> joined = values_of(a);
  for (const double v : values_of(b)) joined.push_back(v);
  EXPECT_EQ(joined, values_of(both));
}

TEST(NnInit, DeterministicInSeedAndOffset) {
  const Tensor a = Tensor::empty({33, 17}, DType::f32);
  const Tensor b = Tensor::empty({33, 17}, DType::f32);
  (void)kaiming_uniform(a, 11, 3);
  (void)kaiming_uniform(b, 11, 3);
  EXPECT_EQ(values_of(a), values_of(b));
  (void)kaiming_uniform(b, 12, 3);
  EXPECT_NE(values_of(a), values_of(b));
  (void)kaiming_uniform(b, 11, 4);
  EXPECT_NE(values_of(a), values_of(b));
}

TEST(NnInit, MisuseIsAUsageError) {
  expect_contains(usage_error([] { (void)kaiming_uniform(Tensor::empty({4}, DType::f32), 1, 0); }),
                  {"kaiming_uniform", "[4]", "rank >= 2", "nn::uniform"});
  expect_contains(usage_error([] { (void)fan_in(Tensor()); }), {"fan_in", "undefined"});
  expect_contains(usage_error([] {
                    (void)xavier_normal(Tensor::empty({2, 2}, DType::i32), 1, 0);
                  }),
                  {"xavier_normal", "i32", "floating"});
  expect_contains(usage_error([] {
                    (void)xavier_uniform(Tensor::empty({2, 2}, DType::f32), 1, 0, -1.0);
                  }),
                  {"xavier_uniform", "gain = -1", ">= 0"});
  expect_contains(usage_error([] {
                    (void)kaiming_normal(Tensor::empty({2, 2}, DType::f32), 1, 0, NAN);
                  }),
                  {"kaiming_normal", "a = nan", "finite"});
  expect_contains(usage_error([] { (void)uniform(Tensor::empty({2}, DType::f32), 1, 0, 1, -1); }),
                  {"uniform", "low = 1", "high = -1"});
}

}  // namespace
}  // namespace tenax::train::nn
