// find_nonfinite and unscale_and_measure (ops_elementwise.hpp) on the CPU backend: the bodies
// shared with every backend (mixed_precision_cases.hpp), the same results for any thread count,
// and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/documented_order.hpp"
#include "kernels/mixed_precision_cases.hpp"
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

using mixed_precision_cases::kInf;
using mixed_precision_cases::kLarge;
using mixed_precision_cases::kNaN;
using mixed_precision_cases::MixedPrecisionKernels;
using mixed_precision_cases::wave;
// The bodies shared with the CUDA backend (mixed_precision_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, MixedPrecisionKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

// ---- find_nonfinite ----

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
