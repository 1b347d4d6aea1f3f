// Reductions on the CPU backend: the bodies shared with every backend (reduce_cases.hpp), and
// the CPU's own: the same bits for any thread count.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/reduce_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using testing::bits;
using testing::make_tensor;

using reduce_cases::random_values;
using reduce_cases::ReduceKernels;

// The bodies shared with the CUDA backend (reduce_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, ReduceKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(Reduce, SameBitsForAnyThreadCount) {
  const std::int64_t n = 2'000'017;
  const std::vector<double> v = random_values(n, 1);
  const std::vector<double> w = random_values(n, 2);
  CpuContext one(1);
  CpuContext two(2);
  CpuContext five(5);
  for (DType dtype : kFloatDTypes) {
    const Tensor x = make_tensor(v, dtype);
    const Tensor y = make_tensor(w, dtype);
    for (CpuContext* other : {&two, &five}) {
      EXPECT_EQ(bits(kernels::cpu::sum(one, x)), bits(kernels::cpu::sum(*other, x)));
      EXPECT_EQ(bits(kernels::cpu::dot(one, x, y)), bits(kernels::cpu::dot(*other, x, y)));
      EXPECT_EQ(bits(kernels::cpu::nrm2(one, x)), bits(kernels::cpu::nrm2(*other, x)));
      EXPECT_EQ(bits(kernels::cpu::max(one, x)), bits(kernels::cpu::max(*other, x)));
      EXPECT_EQ(kernels::cpu::count_nonfinite(one, x), kernels::cpu::count_nonfinite(*other, x));
    }
    EXPECT_EQ(bits(kernels::cpu::sum(one, x)), bits(ops::sum(x)));
  }
}

}  // namespace
}  // namespace tenax
