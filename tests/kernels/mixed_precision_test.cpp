// find_nonfinite and unscale_and_measure (ops_elementwise.hpp) on the CPU backend, the reference
// for the CUDA backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/documented_order.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using testing::get_value;
using testing::make_tensor;
using testing::same_bytes;
using testing::set_value;
using testing::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Several reduction blocks, split over several threads, with a short last block.
constexpr std::int64_t kLarge = 300'001;

std::vector<double> wave(std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    v[static_cast<std::size_t>(i)] = std::sin(0.001 * static_cast<double>(i)) * 100.0 + 0.5;
  }
  return v;
}

// ---- find_nonfinite ----

TEST(FindNonfinite, AllFiniteAndEmpty) {
  for (DType dtype : kFloatDTypes) {
    const ops::NonfiniteReport report = ops::find_nonfinite(make_tensor(wave(kLarge), dtype));
    EXPECT_EQ(report.nan_count, 0) << to_string(dtype);
    EXPECT_EQ(report.inf_count, 0);
    EXPECT_EQ(report.first_index, -1);
    EXPECT_EQ(report.first_value, 0.0);
  }
  const ops::NonfiniteReport empty = ops::find_nonfinite(Tensor::empty({0, 3}, DType::f32));
  EXPECT_EQ(empty.nan_count + empty.inf_count, 0);
  EXPECT_EQ(empty.first_index, -1);
}

TEST(FindNonfinite, CountsAndTheFirstIndexInEveryDtype) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor t = make_tensor(wave(kLarge), dtype);
    set_value(t, kLarge - 1, kNaN);
    set_value(t, 250'000, -kInf);
    set_value(t, 9000, kInf);
    set_value(t, 123'456, kNaN);
    set_value(t, 123'457, kNaN);
    ops::NonfiniteReport report = ops::find_nonfinite(t);
    EXPECT_EQ(report.nan_count, 3) << name;
    EXPECT_EQ(report.inf_count, 2) << name;
    EXPECT_EQ(report.first_index, 9000) << name;
    EXPECT_EQ(report.first_value, kInf) << name;
    EXPECT_EQ(report.nan_count + report.inf_count, ops::count_nonfinite(t)) << name;

    set_value(t, 4097, -kInf);  // a new first, in the second reduction block
    report = ops::find_nonfinite(t);
    EXPECT_EQ(report.first_index, 4097) << name;
    EXPECT_EQ(report.first_value, -kInf) << name;
    EXPECT_EQ(report.inf_count, 3) << name;

    set_value(t, 0, kNaN);
    report = ops::find_nonfinite(t);
    EXPECT_EQ(report.first_index, 0) << name;
    EXPECT_TRUE(std::isnan(report.first_value)) << name;
    EXPECT_EQ(report.nan_count, 4) << name;
  }
}

// The values as stored: beyond f16's range is infinity.
TEST(FindNonfinite, ReportsValuesAsStored) {
  const Tensor h = make_tensor({1.0, 65504.0, -70000.0, 1e6}, DType::f16);
  const ops::NonfiniteReport report = ops::find_nonfinite(h);
  EXPECT_EQ(report.inf_count, 2);
  EXPECT_EQ(report.nan_count, 0);
  EXPECT_EQ(report.first_index, 2);
  EXPECT_EQ(report.first_value, -kInf);
}

TEST(FindNonfinite, SameResultForAnyThreadCount) {
  Tensor t = make_tensor(wave(kLarge), DType::f32);
  for (std::int64_t i = 7; i < kLarge; i += 7919) set_value(t, i, i % 2 == 0 ? kNaN : -kInf);
  CpuContext one(1);
  CpuContext three(3);
  const ops::NonfiniteReport a = kernels::cpu::find_nonfinite(one, t);
  const ops::NonfiniteReport b = kernels::cpu::find_nonfinite(three, t);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.inf_count, b.inf_count);
  EXPECT_EQ(a.first_index, 7);
  EXPECT_EQ(b.first_index, 7);
  EXPECT_EQ(a.first_value, -kInf);
  EXPECT_EQ(b.first_value, -kInf);
  EXPECT_EQ(a.nan_count + a.inf_count, ops::count_nonfinite(t));
}

TEST(FindNonfinite, RejectsIntegerAndUndefinedTensors) {
  testing::expect_contains(
      testing::usage_error([] { (void)ops::find_nonfinite(Tensor::empty({3}, DType::i32)); }),
      {"find_nonfinite", "t is i32[3] on cpu", "floating-point"});
  testing::expect_contains(testing::usage_error([] { (void)ops::find_nonfinite(Tensor()); }),
                           {"find_nonfinite", "t", "undefined"});
}

// ---- unscale_and_measure ----

// The stored values are those of unscale_and_check; the sum of squares is ops::dot(t, t) (and
// its root ops::nrm2(t)) on the unscaled t, bit for bit, in the documented order.
TEST(UnscaleAndMeasure, UnscalesLikeUnscaleAndCheckAndMeasuresLikeDot) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    const Tensor original = make_tensor(wave(kLarge), dtype);
    for (double scale : {1024.0, 3.0, 0.25}) {
      Tensor checked = original.clone();
      Tensor measured = original.clone();
      EXPECT_FALSE(ops::unscale_and_check(checked, scale));
      const ops::UnscaleReport report = ops::unscale_and_measure(measured, scale);
      EXPECT_TRUE(same_bytes(checked, measured)) << name << " scale " << scale;
      EXPECT_EQ(report.nonfinite_count, 0) << name;
      EXPECT_EQ(report.sum_of_squares, ops::dot(measured, measured)) << name << " " << scale;
      EXPECT_EQ(std::sqrt(report.sum_of_squares), ops::nrm2(measured)) << name << " " << scale;
      const std::vector<double> v = values_of(measured);
      EXPECT_EQ(report.sum_of_squares, testing::documented_dot(v, v)) << name << " " << scale;
    }
  }
}

TEST(UnscaleAndMeasure, CountsNonfiniteResults) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor t = make_tensor(wave(kLarge), dtype);
    set_value(t, 5, kNaN);
    set_value(t, 77'777, kInf);
    set_value(t, kLarge - 1, -kInf);
    const ops::UnscaleReport report = ops::unscale_and_measure(t, 8.0);
    EXPECT_EQ(report.nonfinite_count, 3) << name;
    EXPECT_TRUE(std::isnan(report.sum_of_squares)) << name;  // NaN^2 + inf^2 + ...
    EXPECT_EQ(report.nonfinite_count, ops::count_nonfinite(t)) << name;

    Tensor inf_only = make_tensor(wave(1000), dtype);
    set_value(inf_only, 999, -kInf);
    const ops::UnscaleReport inf_report = ops::unscale_and_measure(inf_only, 2.0);
    EXPECT_EQ(inf_report.nonfinite_count, 1) << name;
    EXPECT_EQ(inf_report.sum_of_squares, kInf) << name;
  }
  // 100 / 2^-10 overflows f16 on store: counted as a non-finite result.
  Tensor h = make_tensor({1.0, 100.0, -2.0}, DType::f16);
  const ops::UnscaleReport report = ops::unscale_and_measure(h, 1.0 / 1024);
  EXPECT_EQ(report.nonfinite_count, 1);
  EXPECT_EQ(get_value(h, 0), 1024.0);
  EXPECT_EQ(get_value(h, 1), kInf);
  EXPECT_EQ(get_value(h, 2), -2048.0);
}

// scale == 1 reads t without writing it: even a signalling NaN keeps its bits.
TEST(UnscaleAndMeasure, ScaleOneOnlyReads) {
  Tensor t = make_tensor({1.0, 2.0, 0.0}, DType::f32);
  const std::uint32_t signalling = 0x7f800001u;
  std::memcpy(static_cast<float*>(t.data()) + 2, &signalling, sizeof(signalling));
  const Tensor before = t.clone();
  const ops::UnscaleReport report = ops::unscale_and_measure(t, 1.0);
  EXPECT_TRUE(same_bytes(before, t));
  EXPECT_EQ(report.nonfinite_count, 1);
  Tensor finite = make_tensor(wave(kLarge), DType::bf16);
  const ops::UnscaleReport plain = ops::unscale_and_measure(finite, 1.0);
  EXPECT_EQ(plain.sum_of_squares, ops::dot(finite, finite));
  EXPECT_EQ(plain.nonfinite_count, 0);
}

TEST(UnscaleAndMeasure, SameBitsForAnyThreadCount) {
  CpuContext one(1);
  CpuContext three(3);
  for (DType dtype : kFloatDTypes) {
    Tensor a = make_tensor(wave(kLarge), dtype);
    Tensor b = a.clone();
    const ops::UnscaleReport ra = kernels::cpu::unscale_and_measure(one, a, 1.0 / 1000.0);
    const ops::UnscaleReport rb = kernels::cpu::unscale_and_measure(three, b, 1.0 / 1000.0);
    EXPECT_TRUE(same_bytes(a, b)) << to_string(dtype);
    EXPECT_EQ(ra.sum_of_squares, rb.sum_of_squares) << to_string(dtype);
    EXPECT_EQ(ra.nonfinite_count, rb.nonfinite_count);
  }
}

TEST(UnscaleAndMeasure, EmptyAndBadArguments) {
  const ops::UnscaleReport empty = ops::unscale_and_measure(Tensor::empty({0}, DType::f16), 4.0);
  EXPECT_EQ(empty.nonfinite_count, 0);
  EXPECT_EQ(empty.sum_of_squares, 0.0);
  const Tensor t = Tensor::empty({4}, DType::f32);
  for (double scale : {0.0, -2.0, kInf, kNaN}) {
    testing::expect_contains(
        testing::usage_error([&] { (void)ops::unscale_and_measure(t, scale); }),
        {"unscale_and_measure", "scale", "positive"});
  }
  testing::expect_contains(testing::usage_error([] {
                             (void)ops::unscale_and_measure(Tensor::empty({2}, DType::i64), 2.0);
                           }),
                           {"unscale_and_measure", "t is i64[2] on cpu", "ops::cast"});
}

TEST(MixedPrecisionDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor t = testing::fake_cuda_tensor({4}, DType::f32);
  EXPECT_THROW((void)ops::find_nonfinite(t), NotCompiledError);
  EXPECT_THROW((void)ops::unscale_and_measure(t, 2.0), NotCompiledError);
  EXPECT_THROW(ops::unary_into(ops::UnaryOp::gelu, t, t), NotCompiledError);
}

}  // namespace
}  // namespace tenax
