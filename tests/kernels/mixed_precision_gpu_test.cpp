// The CUDA backend of find_nonfinite and unscale_and_measure against the CPU backend, the
// reference: the same counts, first index and value, the same unscaled bits and the same sum of
// squares bit for bit (both fold it in the fixed order of reduce_bodies.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/mixed_precision_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

// Every mixed-precision test body the CPU backend runs (mixed_precision_cases.hpp), on CUDA.
using mixed_precision_cases::MixedPrecisionKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, MixedPrecisionKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

using testing::expect_identical;
using testing::make_tensor;
using testing::set_value;
using testing::uniform_values;

// Not a multiple of the reduction block or of the CUDA grid, and large enough for many blocks.
constexpr std::int64_t kSize = 1'000'003;

using MixedPrecisionGpu = testing::GpuTest;

void expect_same(const ops::NonfiniteReport& a, const ops::NonfiniteReport& b,
                 const std::string& what) {
  EXPECT_EQ(a.nan_count, b.nan_count) << what;
  EXPECT_EQ(a.inf_count, b.inf_count) << what;
  EXPECT_EQ(a.first_index, b.first_index) << what;
  if (std::isnan(a.first_value)) {
    EXPECT_TRUE(std::isnan(b.first_value)) << what;
  } else {
    EXPECT_EQ(a.first_value, b.first_value) << what;
  }
}

TEST_F(MixedPrecisionGpu, FindNonfiniteMatchesTheCpu) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor t = make_tensor(uniform_values(kSize, 1, -300.0, 300.0), dtype);
    expect_same(ops::find_nonfinite(t), ops::find_nonfinite(t.to(gpu())), name + " finite");
    set_value(t, kSize - 1, NAN);
    set_value(t, 700'001, -INFINITY);
    for (std::int64_t i = 12'345; i < kSize; i += 99'991) set_value(t, i, INFINITY);
    const ops::NonfiniteReport cpu = ops::find_nonfinite(t);
    EXPECT_EQ(cpu.first_index, 12'345);
    expect_same(cpu, ops::find_nonfinite(t.to(gpu())), name);
    set_value(t, 3, NAN);
    expect_same(ops::find_nonfinite(t), ops::find_nonfinite(t.to(gpu())), name + " NaN first");
  }
}

TEST_F(MixedPrecisionGpu, UnscaleAndMeasureMatchesTheCpuBitForBit) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    for (double scale : {1.0, 1024.0, 0.125}) {
      Tensor c = make_tensor(uniform_values(kSize, 2, -300.0, 300.0), dtype);
      Tensor g = c.to(gpu());
      const ops::UnscaleReport rc = ops::unscale_and_measure(c, scale);
      const ops::UnscaleReport rg = ops::unscale_and_measure(g, scale);
      expect_identical(c, g, "unscale_and_measure " + name);
      EXPECT_EQ(rc.sum_of_squares, rg.sum_of_squares) << name << " scale " << scale;
      EXPECT_EQ(rc.nonfinite_count, rg.nonfinite_count) << name << " scale " << scale;
      EXPECT_EQ(rg.sum_of_squares, ops::dot(g, g)) << name;
      EXPECT_EQ(std::sqrt(rg.sum_of_squares), ops::nrm2(g)) << name;
    }
    Tensor bad = make_tensor(uniform_values(kSize, 3, -300.0, 300.0), dtype);
    set_value(bad, 0, NAN);
    set_value(bad, kSize / 2, -INFINITY);
    Tensor gbad = bad.to(gpu());
    const ops::UnscaleReport rc = ops::unscale_and_measure(bad, 4.0);
    const ops::UnscaleReport rg = ops::unscale_and_measure(gbad, 4.0);
    EXPECT_EQ(rc.nonfinite_count, 2) << name;
    EXPECT_EQ(rg.nonfinite_count, 2) << name;
    EXPECT_TRUE(std::isnan(rg.sum_of_squares)) << name;
    expect_identical(bad, gbad, "unscale_and_measure with non-finite values " + name);
  }
}

}  // namespace
}  // namespace tenax
