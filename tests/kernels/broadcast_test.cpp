// Broadcasting binary ops and sum_to (ops_broadcast.hpp) on the CPU backend: the bodies shared
// with every backend (broadcast_cases.hpp), the shape rules, the same sum_to bits for any thread
// count, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/broadcast_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/broadcast_kernels.hpp"
#include "tenax/kernels/ops_broadcast.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::get_value;
using testing::make_tensor;
using testing::set_value;
using testing::uniform_tensor;
using testing::usage_error;
using testing::values_of;

using broadcast_cases::BroadcastKernels;
using broadcast_cases::same_bits;
using broadcast_cases::SumCase;
// The bodies shared with the CUDA backend (broadcast_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, BroadcastKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

// ---- broadcast_shape ----

TEST(BroadcastShape, NumpyRules) {
  EXPECT_EQ(ops::broadcast_shape({4, 3}, {3}), (Shape{4, 3}));
  EXPECT_EQ(ops::broadcast_shape({4, 1}, {1, 3}), (Shape{4, 3}));
  EXPECT_EQ(ops::broadcast_shape({1}, {4, 3}), (Shape{4, 3}));
  EXPECT_EQ(ops::broadcast_shape(Shape{}, {2, 5}), (Shape{2, 5}));
  EXPECT_EQ(ops::broadcast_shape({2, 1, 3, 1}, {4, 1, 5}), (Shape{2, 4, 3, 5}));
  EXPECT_EQ(ops::broadcast_shape({0, 3}, {1, 3}), (Shape{0, 3}));
  EXPECT_EQ(ops::broadcast_shape({1, 1, 1, 1, 1, 1, 1, 7}, {6, 1}),
            (Shape{1, 1, 1, 1, 1, 1, 6, 7}));
  EXPECT_EQ(ops::broadcast_shape(Shape{}, Shape{}), Shape{});
}

TEST(BroadcastShape, MismatchNamesBothShapes) {
  expect_contains(usage_error([] {
                    (void)ops::broadcast_shape({2, 3}, {4});
                  }),
                  {"broadcast_shape", "[2, 3]", "[4]", "extent 3", "extent 4", "equal or 1"});
  expect_contains(usage_error([] {
                    (void)ops::broadcast_shape({0, 3}, {2, 3});
                  }),
                  {"broadcast_shape", "[0, 3]", "[2, 3]"});
}

// ---- broadcast_binary ----

TEST(BroadcastBinary, ErrorsNameTheOpTheOperandsAndTheFix) {
  const Tensor a = Tensor::empty({2, 3}, DType::f32);
  const Tensor b = Tensor::empty({4}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::broadcast_binary(ops::BinaryOp::add, a, b); }),
                  {"broadcast_binary(add)", "a, f32[2, 3] on cpu", "b, f32[4] on cpu",
                   "do not broadcast", "equal or 1"});
  const Tensor h = Tensor::empty({3}, DType::f16);
  expect_contains(usage_error([&] { (void)ops::broadcast_binary(ops::BinaryOp::mul, a, h); }),
                  {"broadcast_binary(mul)", "a is f32", "b is f16", "ops::cast"});
  const Tensor g = testing::fake_cuda_tensor({3}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::broadcast_binary(ops::BinaryOp::sub, a, g); }),
                  {"broadcast_binary(sub)", "a is on cpu", "b is on cuda:0", "to(device)"});
  const Tensor row = Tensor::empty({3}, DType::f32);
  expect_contains(
      usage_error([&] {
        ops::broadcast_binary_into(ops::BinaryOp::div, a, row, Tensor::empty({3, 2}, DType::f32));
      }),
      {"broadcast_binary(div)", "out is f32[3, 2] on cpu", "shape [2, 3]"});
  const Tensor ints = Tensor::empty({3}, DType::i32);
  expect_contains(usage_error([&] { (void)ops::broadcast_binary(ops::BinaryOp::add, ints, ints); }),
                  {"broadcast_binary(add)", "i32", "floating-point"});
  // out overlapping the broadcast operand (a view of out's first row) would race.
  Tensor big = Tensor::empty({4, 3}, DType::f32);
  const Tensor first_row = big.slice(0, 1).reshape({3});
  expect_contains(
      usage_error([&] { ops::broadcast_binary_into(ops::BinaryOp::add, big, first_row, big); }),
      {"broadcast_binary(add)", "out", "overlaps b", "shares no memory"});
}

// ---- sum_to ----

TEST(SumTo, SameBitsForAnyThreadCount) {
  CpuContext one(1);
  CpuContext three(3);
  for (const SumCase& c :
       std::vector<SumCase>{{{3000, 67}, {67}}, {{67, 3000}, {67, 1}}, {{30, 40, 50}, {40, 1}}}) {
    const Tensor x = uniform_tensor(c.x, DType::f32, 42, -4.0, 4.0);
    Tensor a = Tensor::empty(c.target, DType::f32);
    Tensor b = Tensor::empty(c.target, DType::f32);
    const kernels::SumToLayout layout = kernels::make_sum_to_layout(c.x, c.target);
    kernels::cpu::sum_to(one, {x, a, layout});
    kernels::cpu::sum_to(three, {x, b, layout});
    EXPECT_TRUE(same_bits(a, b)) << to_string(c.x);
    EXPECT_TRUE(same_bits(a, ops::sum_to(x, c.target))) << to_string(c.x);
  }
}

TEST(SumTo, ErrorsNameTheShapesAndTheFix) {
  const Tensor x = Tensor::empty({2, 3}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::sum_to(x, {4}); }),
                  {"sum_to", "shape [4]", "does not broadcast to x, f32[2, 3] on cpu", "[B, C]"});
  expect_contains(usage_error([&] {
                    (void)ops::sum_to(x, {1, 2, 3});
                  }),
                  {"sum_to", "[1, 2, 3]", "f32[2, 3] on cpu"});
  expect_contains(usage_error([&] { (void)ops::sum_to(x, {2, 2}); }), {"sum_to", "[2, 2]"});
  expect_contains(usage_error([&] { ops::sum_to_into(x, Tensor::empty({3}, DType::f64)); }),
                  {"sum_to_into", "x is f32", "out is f64", "ops::cast"});
  expect_contains(usage_error([&] { ops::sum_to_into(x, Tensor::empty({2}, DType::f32)); }),
                  {"sum_to_into", "out has shape [2]", "f32[2, 3] on cpu"});
  expect_contains(usage_error([&] { (void)ops::sum_to(Tensor::empty({3}, DType::u8), {1}); }),
                  {"sum_to", "u8", "floating-point"});
  Tensor y = Tensor::empty({4, 3}, DType::f32);
  expect_contains(usage_error([&] { ops::sum_to_into(y, y.slice(1, 2).reshape({3})); }),
                  {"sum_to_into", "overlaps x"});
}

TEST(BroadcastDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor a = testing::fake_cuda_tensor({2, 3}, DType::f32);
  const Tensor b = testing::fake_cuda_tensor({3}, DType::f32);
  const Tensor out = testing::fake_cuda_tensor({2, 3}, DType::f32);
  EXPECT_THROW(ops::broadcast_binary_into(ops::BinaryOp::add, a, b, out), NotCompiledError);
  EXPECT_THROW(ops::sum_to_into(a, b), NotCompiledError);
}

}  // namespace
}  // namespace tenax
