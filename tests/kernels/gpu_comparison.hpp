// Shared by the *_gpu_test.cpp files, which compare the CUDA backend with the CPU backend, the
// reference: a fixture that skips each test, with the reason, where no CUDA device is usable, and
// the comparisons of a GPU result with the CPU's.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/nan_aware_comparison.hpp"
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

// The same shape, the same dtype and the same elements in `cpu` and in `gpu` (any device): every
// element bit for bit, except that a NaN equals any NaN (nan_aware_comparison.hpp: the backends
// do not promise the same NaN payload or sign). A failure names the first differing element, both
// values with their bits, and how many elements differ.
inline void expect_identical(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.device(), Device::cpu());
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(to_string(cpu.dtype()), to_string(gpu.dtype())) << what;
  const Tensor back = gpu.to(Device::cpu());
  const std::optional<std::int64_t> first = first_difference(cpu, back);
  if (first.has_value()) {
    ADD_FAILURE() << what << " differs at element " << *first << " (row-major) of "
                  << cpu.describe() << ": cpu " << describe_element(cpu, *first) << ", "
                  << to_string(gpu.device()) << " " << describe_element(back, *first) << "; "
                  << count_differences(cpu, back) << " of " << cpu.numel() << " elements differ";
  }
}

}  // namespace tenax::testing
