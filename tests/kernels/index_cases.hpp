// gather, scatter and scatter_add (ops_index.hpp) written once for every backend
// (backend_test.hpp), against plain loops over coordinates (axis_reference.hpp): every axis,
// every dtype, both index types, empty indices and data, the last write winning and additions in
// the index's order.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_index.hpp"

namespace tenax::index_cases {

using testing::coordinates;
using testing::counting_tensor;
using testing::expect_moved;
using testing::flat_index;
using testing::make_tensor;
using testing::values_of;

inline Tensor index_tensor(const std::vector<double>& entries, DType dtype) {
  return make_tensor(entries, dtype);
}

inline std::string label(const char* op, DType dtype, DType index, int axis) {
  return std::string(op) + " " + std::string(to_string(dtype)) + " index " +
         std::string(to_string(index)) + " axis " + std::to_string(axis);
}

class IndexKernels : public testing::BackendTest {};

TEST_P(IndexKernels, GatherEveryAxisEveryDtypeBothIndexTypes) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = put(counting_tensor(shape, dtype, 11));
    for (DType index_dtype : {DType::i64, DType::i32}) {
      for (int axis = 0; axis < 3; ++axis) {
        const std::int64_t n = shape[axis];
        const std::vector<double> entries = {static_cast<double>(n - 1), 0, 1, 0,
                                             static_cast<double>(n - 1), 2};
        const Tensor index = put(index_tensor(entries, index_dtype));
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

TEST_P(IndexKernels, GatherEmptyIndexEmptyDataNegativeAxis) {
  const Tensor x = put(counting_tensor({3, 4}, DType::f64));
  EXPECT_EQ(ops::gather(x, 1, Tensor::empty({0}, DType::i64, device())).shape(), (Shape{3, 0}));
  EXPECT_EQ(ops::gather(put(counting_tensor({0, 4}, DType::f32)), 1,
                        put(index_tensor({3, 1}, DType::i64)))
                .shape(),
            (Shape{0, 2}));
  EXPECT_EQ(values_of(ops::gather(x, -1, put(index_tensor({2}, DType::i32)))),
            values_of(ops::gather(x, 1, put(index_tensor({2}, DType::i32)))));
}

TEST_P(IndexKernels, ScatterEveryAxisEveryDtypeLastWins) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    for (DType index_dtype : {DType::i64, DType::i32}) {
      for (int axis = 0; axis < 3; ++axis) {
        const std::int64_t n = shape[axis];
        const std::vector<double> entries = {1, 0, static_cast<double>(n - 1), 1};
        const Tensor index = put(index_tensor(entries, index_dtype));
        std::vector<std::int64_t> extents{3, 4, 5};
        extents[static_cast<std::size_t>(axis)] = 4;
        const Tensor src =
            put(counting_tensor(Shape(std::span<const std::int64_t>(extents)), dtype, 50));
        const Tensor target = put(counting_tensor(shape, dtype, 3));
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

TEST_P(IndexKernels, ScatterAddDuplicatesFollowTheIndexOrder) {
  // In f32, 1e8 + 1 rounds back to 1e8: the index order (1e8, 1, -1e8) gives 0, not 1.
  const Tensor target = put(make_tensor({0.0}, DType::f32));
  ops::scatter_add(target, 0, put(index_tensor({0, 0, 0}, DType::i64)),
                   put(make_tensor({1e8, 1.0, -1e8}, DType::f32)));
  EXPECT_EQ(values_of(target), std::vector<double>{0.0});
  const Tensor other = put(make_tensor({0.0}, DType::f32));
  ops::scatter_add(other, 0, put(index_tensor({0, 0, 0}, DType::i64)),
                   put(make_tensor({1e8, -1e8, 1.0}, DType::f32)));
  EXPECT_EQ(values_of(other), std::vector<double>{1.0});
}

TEST_P(IndexKernels, ScatterAddEveryAxisAddsInIndexOrder) {
  const Shape shape{3, 4, 5};
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      const std::vector<double> entries = {0, static_cast<double>(n - 1), 0, 1, 0};
      const Tensor index = put(index_tensor(entries, DType::i64));
      std::vector<std::int64_t> extents{3, 4, 5};
      extents[static_cast<std::size_t>(axis)] = 5;
      const Tensor src = testing::uniform_tensor(Shape(std::span<const std::int64_t>(extents)),
                                                 dtype, 7 + axis, -3.0, 3.0);
      const Tensor target_host = testing::uniform_tensor(shape, dtype, 17 + axis, -3.0, 3.0);
      // The reference adds in the dtype's own rounding, entry after entry (on the CPU).
      Tensor expected = target_host.clone();
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
      const Tensor target = put(target_host);
      ops::scatter_add(target, axis, index, put(src));
      EXPECT_TRUE(same(target, expected)) << label("scatter_add", dtype, DType::i64, axis);
    }
  }
}

// gather_into writes the out it is given (a slice of a larger tensor) with gather's bits, and
// nothing beside it.
TEST_P(IndexKernels, GatherIntoWritesItsOutputOnly) {
  const Tensor x = put(counting_tensor({3, 4}, DType::f64, 2));
  const Tensor index = put(index_tensor({3, 0, 0, 2, 1}, DType::i64));
  expect_into_writes_its_output_only(
      "gather_into", ops::gather(x, 1, index),
      [&](const Tensor& out) { ops::gather_into(x, 1, index, out); });
}

}  // namespace tenax::index_cases
