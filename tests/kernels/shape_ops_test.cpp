// roll, pad, concat, narrow, permute and transpose (ops_shape.hpp) on the CPU backend: the bodies
// shared with every backend (shape_cases.hpp), and the errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/shape_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_shape.hpp"

namespace tenax {
namespace {

using testing::coordinates;
using testing::counting_tensor;
using testing::expect_contains;
using testing::expect_moved;
using testing::flat_index;
using testing::usage_error;
using testing::values_of;

using shape_cases::kMax;
using shape_cases::ShapeKernels;
// The bodies shared with the CUDA backend (shape_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, ShapeKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(Roll, Errors) {
  const Tensor x = counting_tensor({3, 4, 5}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::roll(x, 1, 3); }),
                  {"roll", "axis 3 is out of range", "[-3, 3)"});
  expect_contains(usage_error([&] { (void)ops::roll(x, 1, -4); }), {"axis -4"});
  expect_contains(usage_error([&] { (void)ops::roll(Tensor::empty({}, DType::f32), 1, 0); }),
                  {"rank 0"});
  expect_contains(usage_error([&] { (void)ops::roll(Tensor(), 1, 0); }), {"undefined"});
  expect_contains(usage_error([&] { ops::roll_into(x, 1, 0, x); }), {"roll", "overlaps x"});
  expect_contains(usage_error([&] {
                    ops::roll_into(x, 1, 0, Tensor::empty({3, 4, 5}, DType::f64));
                  }),
                  {"dtype f32"});
  expect_contains(usage_error([&] {
                    ops::roll_into(x, 1, 0, Tensor::empty({3, 5, 4}, DType::f32));
                  }),
                  {"shape [3, 4, 5]"});
}

TEST(Pad, Errors) {
  const Tensor x = counting_tensor({4, 3}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::pad(x, 0, -1, 0); }),
                  {"pad", "must both be >= 0", "narrow"});
  expect_contains(usage_error([&] { (void)ops::pad(x, 2, 1, 1); }), {"pad", "axis 2"});
  expect_contains(usage_error([&] { (void)ops::pad(x, 1, kMax, 1); }),
                  {"pad", "padded extent", "cannot be counted"});
  // An extent that fits, an element count that does not: refused before allocating.
  expect_contains(usage_error([&] { (void)ops::pad(x, 1, std::int64_t{1} << 62, 0); }),
                  {"pad", "result's shape"});
  expect_contains(
      usage_error([&] {
        (void)ops::pad(counting_tensor({2, 0}, DType::f32), 1, 1, 0, ops::PadMode::periodic);
      }),
      {"periodic padding reads x", "no elements", "PadMode::constant"});
  expect_contains(usage_error([&] {
                    (void)ops::pad(counting_tensor({2}, DType::i32), 0, 1, 0,
                                   ops::PadMode::constant, 0.5);
                  }),
                  {"whole number"});
  expect_contains(
      usage_error([&] {
        ops::pad_into(x, 0, 1, 0, ops::PadMode::constant, 0.0, Tensor::empty({4, 3}, DType::f32));
      }),
      {"shape [5, 3]"});
}

TEST(Concat, EmptyAndErrors) {
  const Tensor a = counting_tensor({2, 3}, DType::f32);
  EXPECT_EQ(ops::concat({counting_tensor({0, 3}, DType::f32)}, 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(values_of(ops::concat({a}, 1)), values_of(a));
  expect_contains(usage_error([&] { (void)ops::concat({}, 0); }), {"concat", "at least one"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, counting_tensor({2, 4}, DType::f32)}, 0);
                  }),
                  {"concat", "xs[1]", "axis 1", "not the joined axis 0"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, counting_tensor({2, 3}, DType::f64)}, 0);
                  }),
                  {"concat", "xs[1] is f64"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, counting_tensor({6}, DType::f32)}, 0);
                  }),
                  {"concat", "rank"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, Tensor()}, 0);
                  }),
                  {"xs[1]", "undefined"});
  expect_contains(usage_error([&] { (void)ops::concat({a}, 2); }), {"concat", "axis 2"});
  const Tensor out = Tensor::empty({4, 3}, DType::f32);
  expect_contains(usage_error([&] {
                    ops::concat_into({a, out.slice(2, 4)}, 0, out);
                  }),
                  {"concat", "out overlaps xs[1]"});
}

TEST(Narrow, Errors) {
  const Tensor x = counting_tensor({3, 4}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::narrow(x, 1, -1, 2); }),
                  {"narrow", "[-1, 2) is not within axis 1", "extent is 4", "not wrapped"});
  expect_contains(usage_error([&] { (void)ops::narrow(x, 1, 3, 2); }), {"[3, 2)"});
  expect_contains(usage_error([&] { (void)ops::narrow(x, 0, 0, 4); }), {"[0, 4)"});
  expect_contains(usage_error([&] { (void)ops::narrow(x, 5, 0, 1); }), {"axis 5"});
  expect_contains(usage_error([&] { ops::narrow_into(x, 0, 0, 1, x.slice(2, 3)); }),
                  {"narrow", "out overlaps x"});
}

TEST(Permute, Errors) {
  const Tensor x = counting_tensor({3, 4, 5}, DType::f32);
  expect_contains(usage_error([&] {
                    (void)ops::permute(x, {0, 1});
                  }),
                  {"permute", "has 2 entries", "rank 3"});
  expect_contains(usage_error([&] {
                    (void)ops::permute(x, {0, 1, -3});
                  }),
                  {"permute", "names axis 0 twice"});
  expect_contains(usage_error([&] { (void)ops::permute(x, {0, 1, 3}); }), {"axis 3"});
  expect_contains(usage_error([&] { (void)ops::transpose(x, 0, 3); }), {"transpose", "axis 3"});
  expect_contains(usage_error([&] {
                    ops::permute_into(x, {2, 1, 0}, x.reshape({5, 4, 3}));
                  }),
                  {"permute", "out overlaps x"});
}

TEST(ShapeOpsDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor x = testing::fake_cuda_tensor({2, 3}, DType::f32);
  EXPECT_THROW((void)ops::roll(x, 1, 0), NotCompiledError);
  EXPECT_THROW((void)ops::pad(x, 0, 1, 1), NotCompiledError);
  EXPECT_THROW((void)ops::narrow(x, 1, 0, 2), NotCompiledError);
  EXPECT_THROW((void)ops::permute(x, {1, 0}), NotCompiledError);
}

}  // namespace
}  // namespace tenax
