// gather, scatter and scatter_add (ops_index.hpp) on the CPU backend: the bodies shared with every
// backend (index_cases.hpp), and the errors (out-of-range entries refused before anything is
// written).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/index_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_index.hpp"

namespace tenax {
namespace {

using testing::counting_tensor;
using testing::expect_contains;
using testing::usage_error;
using testing::values_of;

using index_cases::index_tensor;
using index_cases::IndexKernels;
// The bodies shared with the CUDA backend (index_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, IndexKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(Gather, Errors) {
  const Tensor x = counting_tensor({3, 4}, DType::f32);
  expect_contains(usage_error([&] {
                    (void)ops::gather(x, 1, index_tensor({0, 3, 4}, DType::i64));
                  }),
                  {"gather", "index[2] = 4 is outside [0, 4)", "axis 1 of x"});
  expect_contains(usage_error([&] { (void)ops::gather(x, 0, index_tensor({-1}, DType::i32)); }),
                  {"index[0] = -1", "not wrapped"});
  expect_contains(usage_error([&] { (void)ops::gather(x, 0, index_tensor({0}, DType::f32)); }),
                  {"gather", "1-D tensor of i64 or i32"});
  expect_contains(usage_error([&] {
                    (void)ops::gather(x, 0, Tensor::empty({1, 1}, DType::i64));
                  }),
                  {"1-D"});
  expect_contains(usage_error([&] { (void)ops::gather(x, 2, index_tensor({0}, DType::i64)); }),
                  {"gather", "axis 2"});
  expect_contains(usage_error([&] {
                    (void)ops::gather(counting_tensor({0}, DType::f32), 0,
                                      index_tensor({0}, DType::i64));
                  }),
                  {"outside [0, 0)"});
  const Tensor out = Tensor::empty({3, 4}, DType::f32);
  expect_contains(usage_error([&] {
                    ops::gather_into(x, 1, index_tensor({0, 1, 2, 3}, DType::i64), x);
                  }),
                  {"gather", "out overlaps x"});
  expect_contains(usage_error([&] { ops::gather_into(x, 1, index_tensor({0}, DType::i64), out); }),
                  {"shape [3, 1]"});
}

TEST(Scatter, EmptyAndErrors) {
  const Tensor target = counting_tensor({3, 4}, DType::f32);
  const std::vector<double> before = values_of(target);
  ops::scatter(target, 1, Tensor::empty({0}, DType::i64), Tensor::empty({3, 0}, DType::f32));
  ops::scatter_add(counting_tensor({0, 4}, DType::f32), 1, index_tensor({1}, DType::i64),
                   Tensor::empty({0, 1}, DType::f32));
  EXPECT_EQ(values_of(target), before);
  // An out-of-range entry anywhere: refused, nothing written.
  expect_contains(usage_error([&] {
                    ops::scatter(target, 1, index_tensor({0, 9}, DType::i64),
                                 counting_tensor({3, 2}, DType::f32, 60));
                  }),
                  {"scatter", "index[1] = 9 is outside [0, 4)", "of target"});
  EXPECT_EQ(values_of(target), before);
  expect_contains(usage_error([&] {
                    ops::scatter(target, 1, index_tensor({0, 1}, DType::i64),
                                 counting_tensor({3, 3}, DType::f32));
                  }),
                  {"scatter", "needs src of shape [3, 2]"});
  expect_contains(usage_error([&] {
                    ops::scatter_add(counting_tensor({4}, DType::i32), 0,
                                     index_tensor({0}, DType::i64),
                                     counting_tensor({1}, DType::i32));
                  }),
                  {"scatter_add", "floating-point"});
  expect_contains(
      usage_error([&] {
        ops::scatter(target, 0, index_tensor({0}, DType::i64), counting_tensor({1, 4}, DType::f64));
      }),
      {"scatter", "src is f64"});
  expect_contains(usage_error([&] {
                    ops::scatter(target, 0, index_tensor({0}, DType::i64), target.slice(1, 2));
                  }),
                  {"scatter", "target overlaps src"});
}

TEST(IndexOpsDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor x = testing::fake_cuda_tensor({2, 3}, DType::f32);
  const Tensor index = testing::fake_cuda_tensor({1}, DType::i64);
  EXPECT_THROW((void)ops::gather(x, 0, index), NotCompiledError);
}

}  // namespace
}  // namespace tenax
