// sum, max, min and mean along an axis (ops_reduce_axis.hpp) on the CPU backend: the bodies shared
// with every backend (reduce_axis_cases.hpp) and the errors. The cases' reference folds each line
// by reduction_order.hpp's rule read literally (blocks, lanes, the lanes' halving tree,
// combine_partials level by level), independently of the kernel's binary-counter form of the block
// tree; lines long enough for several blocks (odd counts of them) check the tree. A 1-D line also
// gives the bits of ops::sum and ops::max.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/reduce_axis_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_reduce_axis.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::usage_error;
using testing::values_of;

using reduce_axis_cases::ReduceAxisKernels;
// The bodies shared with the CUDA backend (reduce_axis_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, ReduceAxisKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(ReduceAxis, Errors) {
  const Tensor x = testing::uniform_tensor({3, 4}, DType::f64, 1, 0.0, 1.0);
  expect_contains(usage_error([&] { (void)ops::sum_along(x, 2); }),
                  {"reduce(sum)", "axis 2 is out of range", "[-2, 2)"});
  expect_contains(
      usage_error([&] { (void)ops::sum_along(testing::make_tensor({1.0}, DType::i32), 0); }),
      {"reduce(sum)", "floating-point"});
  expect_contains(usage_error([&] { (void)ops::sum_along(Tensor::empty({}, DType::f64), 0); }),
                  {"rank 0"});
  expect_contains(usage_error([&] {
                    ops::reduce_into(ops::AxisReduction::sum, x, 0, Tensor::empty({3}, DType::f64));
                  }),
                  {"reduce(sum)", "shape [4]"});
  expect_contains(usage_error([&] {
                    ops::reduce_into(ops::AxisReduction::sum, x, 0, Tensor::empty({4}, DType::f32));
                  }),
                  {"dtype f64"});
  expect_contains(usage_error([&] {
                    ops::reduce_into(ops::AxisReduction::sum, x, 1, x.reshape({12}).slice(0, 3));
                  }),
                  {"out overlaps x"});
  // keepdim's shape is accepted by reduce_into too.
  const Tensor kept = Tensor::empty({1, 4}, DType::f64);
  ops::reduce_into(ops::AxisReduction::mean, x, 0, kept);
  EXPECT_EQ(values_of(kept), values_of(ops::mean_along(x, 0)));
}

TEST(ReduceAxisDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  EXPECT_THROW((void)ops::sum_along(testing::fake_cuda_tensor({2, 3}, DType::f32), 0),
               NotCompiledError);
}

}  // namespace
}  // namespace tenax
