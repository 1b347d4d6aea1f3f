// gather, scatter and scatter_add (ops_index.hpp) on the CPU backend, the reference for the CUDA
// backend, against plain loops: every dtype, every axis of a 3-D tensor, i64 and i32 indices with
// duplicates, the index-order rule for duplicates, empty tensors and indices, and the errors
// (out-of-range entries refused before anything is written).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_index.hpp"

namespace tenax {
namespace {

using testing::coordinates;
using testing::counting_tensor;
using testing::expect_contains;
using testing::expect_moved;
using testing::flat_index;
using testing::make_tensor;
using testing::usage_error;
using testing::values_of;

Tensor index_tensor(const std::vector<double>& entries, DType dtype) {
  return make_tensor(entries, dtype);
}

std::string label(const char* op, DType dtype, DType index, int axis) {
  return std::string(op) + " " + std::string(to_string(dtype)) + " index " +
         std::string(to_string(index)) + " axis " + std::to_string(axis);
}

TEST(Gather, EveryAxisEveryDtypeBothIndexTypes) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = counting_tensor(shape, dtype, 11);
    for (DType index_dtype : {DType::i64, DType::i32}) {
      for (int axis = 0; axis < 3; ++axis) {
        const std::int64_t n = shape[axis];
        const std::vector<double> entries = {static_cast<double>(n - 1), 0, 1, 0,
                                             static_cast<double>(n - 1), 2};
        const Tensor index = index_tensor(entries, index_dtype);
        const Tensor out = ops::gather(x, axis, index);
        ASSERT_EQ(out.shape()[axis], 6);
        expect_moved(
            out, x,
            [&](std::int64_t e) {
              std::vector<std::int64_t> c = coordinates(out.shape(), e);
              auto& j = c[static_cast<std::size_t>(axis)];
              j = static_cast<std::int64_t>(entries[static_cast<std::size_t>(j)]);
              return flat_index(shape, c);
            },
            label("gather", dtype, index_dtype, axis));
      }
    }
  }
}

TEST(Gather, EmptyIndexEmptyDataNegativeAxis) {
  const Tensor x = counting_tensor({3, 4}, DType::f64);
  EXPECT_EQ(ops::gather(x, 1, Tensor::empty({0}, DType::i64)).shape(), (Shape{3, 0}));
  EXPECT_EQ(
      ops::gather(counting_tensor({0, 4}, DType::f32), 1, index_tensor({3, 1}, DType::i64)).shape(),
      (Shape{0, 2}));
  EXPECT_EQ(values_of(ops::gather(x, -1, index_tensor({2}, DType::i32))),
            values_of(ops::gather(x, 1, index_tensor({2}, DType::i32))));
}

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

TEST(Scatter, EveryAxisEveryDtypeLastWins) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    for (DType index_dtype : {DType::i64, DType::i32}) {
      for (int axis = 0; axis < 3; ++axis) {
        const std::int64_t n = shape[axis];
        const std::vector<double> entries = {1, 0, static_cast<double>(n - 1), 1};
        const Tensor index = index_tensor(entries, index_dtype);
        std::vector<std::int64_t> extents{3, 4, 5};
        extents[static_cast<std::size_t>(axis)] = 4;
        const Tensor src =
            counting_tensor(Shape(std::span<const std::int64_t>(extents)), dtype, 50);
        const Tensor target = counting_tensor(shape, dtype, 3);
        std::vector<double> expected = values_of(target);
        const std::vector<double> s = values_of(src);
        for (std::int64_t e = 0; e < src.numel(); ++e) {  // row-major: j increases per column
          std::vector<std::int64_t> c = coordinates(src.shape(), e);
          auto& j = c[static_cast<std::size_t>(axis)];
          j = static_cast<std::int64_t>(entries[static_cast<std::size_t>(j)]);
          expected[static_cast<std::size_t>(flat_index(shape, c))] = s[static_cast<std::size_t>(e)];
        }
        ops::scatter(target, axis, index, src);
        EXPECT_EQ(values_of(target), expected) << label("scatter", dtype, index_dtype, axis);
      }
    }
  }
}

TEST(ScatterAdd, EveryAxisAddsInIndexOrder) {
  const Shape shape{3, 4, 5};
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      const std::vector<double> entries = {0, static_cast<double>(n - 1), 0, 1, 0};
      const Tensor index = index_tensor(entries, DType::i64);
      std::vector<std::int64_t> extents{3, 4, 5};
      extents[static_cast<std::size_t>(axis)] = 5;
      const Tensor src = testing::uniform_tensor(Shape(std::span<const std::int64_t>(extents)),
                                                 dtype, 7 + axis, -3.0, 3.0);
      const Tensor target = testing::uniform_tensor(shape, dtype, 17 + axis, -3.0, 3.0);
      // The reference adds in the dtype's own rounding, entry after entry.
      Tensor expected = target.clone();
      for (std::int64_t e = 0; e < src.numel(); ++e) {
        std::vector<std::int64_t> c = coordinates(src.shape(), e);
        auto& j = c[static_cast<std::size_t>(axis)];
        j = static_cast<std::int64_t>(entries[static_cast<std::size_t>(j)]);
        const std::int64_t t = flat_index(shape, c);
        const double sum =
            dtype == DType::f64
                ? testing::get_value(expected, t) + testing::get_value(src, e)
                : static_cast<double>(static_cast<float>(testing::get_value(expected, t)) +
                                      static_cast<float>(testing::get_value(src, e)));
        testing::set_value(expected, t, sum);
      }
      ops::scatter_add(target, axis, index, src);
      EXPECT_TRUE(testing::same_bytes(target, expected))
          << label("scatter_add", dtype, DType::i64, axis);
    }
  }
}

TEST(ScatterAdd, DuplicatesFollowTheIndexOrder) {
  // In f32, 1e8 + 1 rounds back to 1e8: the index order (1e8, 1, -1e8) gives 0, not 1.
  const Tensor target = make_tensor({0.0}, DType::f32);
  ops::scatter_add(target, 0, index_tensor({0, 0, 0}, DType::i64),
                   make_tensor({1e8, 1.0, -1e8}, DType::f32));
  EXPECT_EQ(values_of(target), std::vector<double>{0.0});
  const Tensor other = make_tensor({0.0}, DType::f32);
  ops::scatter_add(other, 0, index_tensor({0, 0, 0}, DType::i64),
                   make_tensor({1e8, -1e8, 1.0}, DType::f32));
  EXPECT_EQ(values_of(other), std::vector<double>{1.0});
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
