// Shared by the *_gpu_test.cpp files, which compare the CUDA backend with the CPU backend, the
// reference: a fixture that skips each test, with the reason, where no CUDA device is usable, and
// the comparisons of a GPU result with the CPU's.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::testing {

// Skips each test where no CUDA device is usable, saying why; gpu() is the device compared.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const tenax::cuda::Availability& cuda = tenax::cuda::availability();
    if (!cuda.usable) {
      GTEST_SKIP() << "needs a usable CUDA device to compare with the CPU backend: " << cuda.reason;
    }
  }
  static Device gpu() { return Device::cuda(0); }
};

// The significand bits of a floating dtype (f64 53, f32 24, f16 11, bf16 8): one unit in the last
// place of x is ldexp(|x|, 1 - digits) for x a power of two.
inline int significand_digits(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 24;
    case DType::f16:
      return 11;
    case DType::bf16:
      return 8;
    default:
      return 53;
  }
}

// The same shape and the same bytes (NaNs included) in `cpu` and in `gpu` (any device).
inline void expect_identical(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.device(), Device::cpu());
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  const Tensor back = gpu.to(Device::cpu());
  ASSERT_EQ(cpu.nbytes(), back.nbytes());
  EXPECT_EQ(std::memcmp(cpu.data(), back.data(), cpu.nbytes()), 0) << what << " differs";
}

}  // namespace tenax::testing
