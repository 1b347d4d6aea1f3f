// find_nonfinite and unscale_and_measure written once for every backend (backend_test.hpp): the
// counts and the first non-finite element in every dtype, the values as stored, unscaling like
// unscale_and_check with the norm of dot's order, and scale 1 reading without writing.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/documented_order.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::mixed_precision_cases {

using testing::make_tensor;
using testing::values_of;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Several reduction blocks, split over several threads, with a short last block.
inline constexpr std::int64_t kLarge = 300'001;

inline std::vector<double> wave(std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    v[static_cast<std::size_t>(i)] = std::sin(0.001 * static_cast<double>(i)) * 100.0 + 0.5;
  }
  return v;
}

class MixedPrecisionKernels : public testing::BackendTest {};

TEST_P(MixedPrecisionKernels, FindNonfiniteAllFiniteAndEmpty) {
  for (DType dtype : kFloatDTypes) {
    const ops::NonfiniteReport report = ops::find_nonfinite(put(make_tensor(wave(kLarge), dtype)));
    EXPECT_EQ(report.nan_count, 0) << to_string(dtype);
    EXPECT_EQ(report.inf_count, 0);
    EXPECT_EQ(report.first_index, -1);
    EXPECT_EQ(report.first_value, 0.0);
  }
  const ops::NonfiniteReport empty =
      ops::find_nonfinite(Tensor::empty({0, 3}, DType::f32, device()));
  EXPECT_EQ(empty.nan_count + empty.inf_count, 0);
  EXPECT_EQ(empty.first_index, -1);
}

TEST_P(MixedPrecisionKernels, FindNonfiniteCountsAndTheFirstIndexInEveryDtype) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor t = put(make_tensor(wave(kLarge), dtype));
    set_at(t, kLarge - 1, kNaN);
    set_at(t, 250'000, -kInf);
    set_at(t, 9000, kInf);
    set_at(t, 123'456, kNaN);
    set_at(t, 123'457, kNaN);
    ops::NonfiniteReport report = ops::find_nonfinite(t);
    EXPECT_EQ(report.nan_count, 3) << name;
    EXPECT_EQ(report.inf_count, 2) << name;
    EXPECT_EQ(report.first_index, 9000) << name;
    EXPECT_EQ(report.first_value, kInf) << name;
    EXPECT_EQ(report.nan_count + report.inf_count, ops::count_nonfinite(t)) << name;

    set_at(t, 4097, -kInf);  // a new first, in the second reduction block
    report = ops::find_nonfinite(t);
    EXPECT_EQ(report.first_index, 4097) << name;
    EXPECT_EQ(report.first_value, -kInf) << name;
    EXPECT_EQ(report.inf_count, 3) << name;

    set_at(t, 0, kNaN);
    report = ops::find_nonfinite(t);
    EXPECT_EQ(report.first_index, 0) << name;
    EXPECT_TRUE(std::isnan(report.first_value)) << name;
    EXPECT_EQ(report.nan_count, 4) << name;
  }
}

// The values as stored: beyond f16's range is infinity.
TEST_P(MixedPrecisionKernels, FindNonfiniteReportsValuesAsStored) {
  const Tensor h = put(make_tensor({1.0, 65504.0, -70000.0, 1e6}, DType::f16));
  const ops::NonfiniteReport report = ops::find_nonfinite(h);
  EXPECT_EQ(report.inf_count, 2);
  EXPECT_EQ(report.nan_count, 0);
  EXPECT_EQ(report.first_index, 2);
  EXPECT_EQ(report.first_value, -kInf);
}

// The stored values are those of unscale_and_check; the sum of squares is ops::dot(t, t) (and
// its root ops::nrm2(t)) on the unscaled t, bit for bit, in the documented order.
TEST_P(MixedPrecisionKernels, UnscaleAndMeasureUnscalesLikeUnscaleAndCheckAndMeasuresLikeDot) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    const Tensor original = put(make_tensor(wave(kLarge), dtype));
    for (double scale : {1024.0, 3.0, 0.25}) {
      Tensor checked = original.clone();
      Tensor measured = original.clone();
      EXPECT_FALSE(ops::unscale_and_check(checked, scale));
      const ops::UnscaleReport report = ops::unscale_and_measure(measured, scale);
      EXPECT_TRUE(same(checked, measured)) << name << " scale " << scale;
      EXPECT_EQ(report.nonfinite_count, 0) << name;
      EXPECT_EQ(report.sum_of_squares, ops::dot(measured, measured)) << name << " " << scale;
      EXPECT_EQ(std::sqrt(report.sum_of_squares), ops::nrm2(measured)) << name << " " << scale;
      const std::vector<double> v = values_of(measured);
      EXPECT_EQ(report.sum_of_squares, testing::documented_dot(v, v)) << name << " " << scale;
    }
  }
}

TEST_P(MixedPrecisionKernels, UnscaleAndMeasureCountsNonfiniteResults) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor t = put(make_tensor(wave(kLarge), dtype));
    set_at(t, 5, kNaN);
    set_at(t, 77'777, kInf);
    set_at(t, kLarge - 1, -kInf);
    const ops::UnscaleReport report = ops::unscale_and_measure(t, 8.0);
    EXPECT_EQ(report.nonfinite_count, 3) << name;
    EXPECT_TRUE(std::isnan(report.sum_of_squares)) << name;  // NaN^2 + inf^2 + ...
    EXPECT_EQ(report.nonfinite_count, ops::count_nonfinite(t)) << name;

    Tensor inf_only = put(make_tensor(wave(1000), dtype));
    set_at(inf_only, 999, -kInf);
    const ops::UnscaleReport inf_report = ops::unscale_and_measure(inf_only, 2.0);
    EXPECT_EQ(inf_report.nonfinite_count, 1) << name;
    EXPECT_EQ(inf_report.sum_of_squares, kInf) << name;
  }
  // 100 / 2^-10 overflows f16 on store: counted as a non-finite result.
  Tensor h = put(make_tensor({1.0, 100.0, -2.0}, DType::f16));
  const ops::UnscaleReport report = ops::unscale_and_measure(h, 1.0 / 1024);
  EXPECT_EQ(report.nonfinite_count, 1);
  EXPECT_EQ(value_at(h, 0), 1024.0);
  EXPECT_EQ(value_at(h, 1), kInf);
  EXPECT_EQ(value_at(h, 2), -2048.0);
}

// scale == 1 reads t without writing it: even a signalling NaN keeps its bits.
TEST_P(MixedPrecisionKernels, UnscaleAndMeasureScaleOneOnlyReads) {
  Tensor host = make_tensor({1.0, 2.0, 0.0}, DType::f32);
  const std::uint32_t signalling = 0x7f800001u;
  std::memcpy(static_cast<float*>(host.data()) + 2, &signalling, sizeof(signalling));
  Tensor t = put(host);
  const Tensor before = t.clone();
  const ops::UnscaleReport report = ops::unscale_and_measure(t, 1.0);
  EXPECT_TRUE(same(before, t));
  EXPECT_EQ(report.nonfinite_count, 1);
  Tensor finite = put(make_tensor(wave(kLarge), DType::bf16));
  const ops::UnscaleReport plain = ops::unscale_and_measure(finite, 1.0);
  EXPECT_EQ(plain.sum_of_squares, ops::dot(finite, finite));
  EXPECT_EQ(plain.nonfinite_count, 0);
}

}  // namespace tenax::mixed_precision_cases
