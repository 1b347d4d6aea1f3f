// The element-wise, fill, copy/cast, random and check ops on the CPU backend: the bodies shared
// with every backend (elementwise_cases.hpp), and the same random bits for any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/elementwise_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/half.hpp"
#include "tenax/core/philox.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using elementwise_cases::ElementwiseKernels;
using elementwise_cases::kLarge;
// The bodies shared with the CUDA backend (elementwise_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, ElementwiseKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(Random, SameBitsForAnyThreadCount) {
  CpuContext one(1);
  CpuContext three(3);
  Tensor a = Tensor::empty({kLarge}, DType::bf16);
  Tensor b = Tensor::empty({kLarge}, DType::bf16);
  kernels::cpu::random_normal(one, a, 5, 3, 0.0, 1.0);
  kernels::cpu::random_normal(three, b, 5, 3, 0.0, 1.0);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
}

TEST(Dispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor t = testing::fake_cuda_tensor({4}, DType::f32);
  EXPECT_THROW(ops::fill(t, 1.0), NotCompiledError);
  EXPECT_THROW((void)ops::sum(t), NotCompiledError);
  EXPECT_THROW((void)ops::unscale_and_check(t, 2.0), NotCompiledError);
  EXPECT_THROW(ops::axpby(1.0, t, 1.0, t), NotCompiledError);
  EXPECT_THROW(kernels::cuda::random_uniform(t, 0, 0, 0.0, 1.0), NotCompiledError);
  try {
    ops::unary_into(ops::UnaryOp::exp, t, t);
    FAIL() << "exp of a CUDA tensor must throw in a build without CUDA";
  } catch (const NotCompiledError& e) {
    EXPECT_NE(std::string(e.what()).find("unary"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TENAX_WITH_CUDA"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tenax
