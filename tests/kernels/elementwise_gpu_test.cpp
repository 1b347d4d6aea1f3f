// The CUDA backend of the element-wise, cast, random and reduction ops against the CPU backend,
// the reference. Arithmetic that is correctly rounded on both sides (and the reductions, which
// share one fixed order) must match bit for bit; exp, log, tanh and sigmoid use each side's math
// library and must agree within a few units in the last place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/elementwise_cases.hpp"
#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

// Every element-wise test body the CPU backend runs (elementwise_cases.hpp), on CUDA.
using elementwise_cases::ElementwiseKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, ElementwiseKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

using testing::expect_identical;
using testing::make_tensor;
using testing::significand_digits;
using testing::uniform_values;
using testing::values_of;

// Not a multiple of the reduction block or of the CUDA grid, and large enough for many blocks.
constexpr std::int64_t kSize = 1'000'003;

using ElementwiseGpu = testing::GpuTest;

// Within `ulps` units in the last place of the dtype (NaNs must match NaNs).
void expect_close(const Tensor& cpu, const Tensor& gpu, double ulps, const std::string& what) {
  const std::vector<double> a = values_of(cpu);
  const std::vector<double> b = values_of(gpu);
  ASSERT_EQ(a.size(), b.size());
  const int digits = significand_digits(cpu.dtype());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      ASSERT_TRUE(std::isnan(a[i]) && std::isnan(b[i])) << what << " at " << i;
      continue;
    }
    const double tolerance = ulps * std::ldexp(std::max(std::fabs(a[i]), 1e-30), -digits + 1);
    ASSERT_NEAR(a[i], b[i], tolerance) << what << " at " << i;
  }
}

TEST_F(ElementwiseGpu, FillRandomAndCastMatchBitForBit) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor c = Tensor::empty({kSize}, dtype);
    Tensor g = Tensor::empty({kSize}, dtype, gpu());
    ops::fill(c, 0.1);
    ops::fill(g, 0.1);
    expect_identical(c, g, "fill " + name);
    ops::random_uniform(c, 11, 5, -1.0, 3.0);
    ops::random_uniform(g, 11, 5, -1.0, 3.0);
    expect_identical(c, g, "random_uniform " + name);
    ops::random_normal(c, 11, 5, 0.5, 2.0);
    ops::random_normal(g, 11, 5, 0.5, 2.0);
    expect_identical(c, g, "random_normal " + name);
    for (DType to : kFloatDTypes) {
      expect_identical(ops::cast(c, to), ops::cast(g, to),
                       "cast " + name + " -> " + std::string(to_string(to)));
    }
  }
}

TEST_F(ElementwiseGpu, CopyAndCastAcrossDevices) {
  const Tensor src = make_tensor(uniform_values(kSize, 1, -4.0, 4.0), DType::f32);
  for (DType to : kFloatDTypes) {
    const Tensor reference = ops::cast(src, to);
    Tensor on_gpu = Tensor::empty({kSize}, to, gpu());
    ops::cast_into(on_gpu, src);  // widening or narrowing, CPU -> GPU
    expect_identical(reference, on_gpu, "cast_into cpu -> gpu");
    Tensor back = Tensor::empty({kSize}, DType::f32);
    ops::cast_into(back, on_gpu);  // GPU -> CPU
    expect_identical(ops::cast(reference, DType::f32), back, "cast_into gpu -> cpu");
  }
  Tensor g = Tensor::empty({kSize}, DType::f32, gpu());
  ops::copy(g, src);
  Tensor g2 = Tensor::empty({kSize}, DType::f32, gpu());
  ops::copy(g2, g);
  expect_identical(src, g2, "copy");
}

// A copy on the device moves bytes, as the CPU's does: signalling NaNs and every payload of the
// 16-bit types survive (a copy by widening to float quieted them).
TEST_F(ElementwiseGpu, CopyOnTheDeviceKeepsEveryBitPattern) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    // Every 16-bit pattern: signalling and quiet NaNs with payloads, infinities, subnormals.
    Tensor all = Tensor::empty({65536}, dtype);
    auto* bits = static_cast<std::uint16_t*>(all.data());
    for (std::uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<std::uint16_t>(i);
    const Tensor on_gpu = all.to(gpu());
    const Tensor copied = Tensor::empty({65536}, dtype, gpu());
    ops::copy(copied, on_gpu);
    const Tensor back = copied.to(Device::cpu());
    const auto* got = static_cast<const std::uint16_t*>(back.data());
    std::int64_t differ = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) differ += got[i] != bits[i] ? 1 : 0;
    EXPECT_EQ(differ, 0) << to_string(dtype) << ": patterns changed by a device copy";
  }
}

TEST_F(ElementwiseGpu, Blas1AndCorrectlyRoundedOpsMatchBitForBit) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    const Tensor x = make_tensor(uniform_values(kSize, 2, -4.0, 4.0), dtype);
    const Tensor y = make_tensor(uniform_values(kSize, 3, -4.0, 4.0), dtype);
    const Tensor gx = x.to(gpu());
    const Tensor gy = y.to(gpu());
    Tensor cy = y.clone();
    Tensor gy2 = gy.clone();
    ops::axpby(0.75, x, -1.5, cy);
    ops::axpby(0.75, gx, -1.5, gy2);
    expect_identical(cy, gy2, "axpby " + name);
    ops::scale(3.0, cy);
    ops::scale(3.0, gy2);
    expect_identical(cy, gy2, "scale " + name);
    for (ops::UnaryOp op : {ops::UnaryOp::neg, ops::UnaryOp::abs, ops::UnaryOp::sqrt,
                            ops::UnaryOp::relu, ops::UnaryOp::square}) {
      expect_identical(ops::unary(op, x), ops::unary(op, gx),
                       std::string(ops::to_string(op)) + " " + name);
    }
    for (ops::BinaryOp op : {ops::BinaryOp::add, ops::BinaryOp::sub, ops::BinaryOp::mul,
                             ops::BinaryOp::div, ops::BinaryOp::maximum, ops::BinaryOp::minimum}) {
      expect_identical(ops::binary(op, x, y), ops::binary(op, gx, gy),
                       std::string(ops::to_string(op)) + " " + name);
    }
  }
}

TEST_F(ElementwiseGpu, TranscendentalOpsAgreeWithinAFewUlps) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = make_tensor(uniform_values(kSize, 4, 0.01, 8.0), dtype);
    const Tensor gx = x.to(gpu());
    for (ops::UnaryOp op :
         {ops::UnaryOp::exp, ops::UnaryOp::log, ops::UnaryOp::tanh, ops::UnaryOp::sigmoid}) {
      // f16/bf16 results differ by at most one rounding step of the narrow type.
      const double ulps = (dtype == DType::f16 || dtype == DType::bf16) ? 1.0 : 4.0;
      expect_close(ops::unary(op, x), ops::unary(op, gx), ulps,
                   std::string(ops::to_string(op)) + " " + std::string(to_string(dtype)));
    }
  }
}

TEST_F(ElementwiseGpu, ReductionsReturnTheCpuBits) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    std::vector<double> v = uniform_values(kSize, 5, -4.0, 4.0);
    const Tensor x = make_tensor(v, dtype);
    const Tensor y = make_tensor(uniform_values(kSize, 6, -4.0, 4.0), dtype);
    const Tensor gx = x.to(gpu());
    const Tensor gy = y.to(gpu());
    EXPECT_EQ(ops::sum(x), ops::sum(gx)) << name;
    EXPECT_EQ(ops::dot(x, y), ops::dot(gx, gy)) << name;
    EXPECT_EQ(ops::nrm2(x), ops::nrm2(gx)) << name;
    EXPECT_EQ(ops::max(x), ops::max(gx)) << name;
    EXPECT_EQ(ops::count_nonfinite(x), 0);
    EXPECT_EQ(ops::count_nonfinite(gx), 0);
    v[17] = std::nan("");
    v[kSize - 1] = INFINITY;
    const Tensor bad = make_tensor(v, dtype);
    EXPECT_EQ(ops::count_nonfinite(bad.to(gpu())), 2) << name;
    EXPECT_TRUE(std::isnan(ops::max(bad.to(gpu())))) << name;
  }
}

TEST_F(ElementwiseGpu, UnscaleAndCheckMatchesAndFindsOneNaN) {
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    Tensor c = make_tensor(uniform_values(kSize, 7, -4.0, 4.0), dtype);
    Tensor g = c.to(gpu());
    EXPECT_FALSE(ops::unscale_and_check(c, 3.0)) << name;
    EXPECT_FALSE(ops::unscale_and_check(g, 3.0)) << name;
    expect_identical(c, g, "unscale_and_check " + name);
    for (std::int64_t where : {std::int64_t{0}, kSize / 2, kSize - 1}) {
      Tensor h = c.clone();
      testing::set_value(h, where, std::nan(""));
      Tensor gh = h.to(gpu());
      EXPECT_TRUE(ops::unscale_and_check(gh, 1024.0)) << name << " at " << where;
      EXPECT_TRUE(ops::unscale_and_check(h, 1024.0)) << name << " at " << where;
      expect_identical(h, gh, "unscale_and_check with a NaN " + name);
    }
  }
}

}  // namespace
}  // namespace tenax
