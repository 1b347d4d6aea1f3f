// roll, pad, concat, narrow, permute and transpose (ops_shape.hpp) written once for every backend
// (backend_test.hpp), against plain scalar loops over coordinates (axis_reference.hpp): every
// dtype, every axis of a 3-D tensor of odd extents, empty and 1-element tensors, negative and
// huge shifts and pads.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_shape.hpp"

namespace tenax::shape_cases {

using testing::coordinates;
using testing::counting_tensor;
using testing::expect_moved;
using testing::flat_index;
using testing::values_of;

inline constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// k mod n in [0, n) without overflow.
inline std::int64_t modulo(std::int64_t k, std::int64_t n) {
  const std::int64_t r = k % n;
  return r < 0 ? r + n : r;
}

inline std::string label(const char* op, DType dtype, int axis, std::int64_t a,
                         std::int64_t b = 0) {
  return std::string(op) + " " + std::string(to_string(dtype)) + " axis " + std::to_string(axis) +
         " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

// The input coordinate that pad reads at k (outside [0, n) for the padded positions), by repeated
// mirroring (reflect) or stepping by n (periodic): another way to the rule of PadMode.
inline std::int64_t pad_reference(ops::PadMode mode, std::int64_t k, std::int64_t n) {
  if (mode == ops::PadMode::periodic) return modulo(k, n);
  while (k < 0 || k >= n) k = k < 0 ? -1 - k : 2 * n - 1 - k;
  return k;
}

class ShapeKernels : public testing::BackendTest {};

TEST_P(ShapeKernels, RollEveryAxisEveryDtypeAnyShift) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = put(counting_tensor(shape, dtype));
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      for (std::int64_t shift :
           {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{4}, std::int64_t{5},
            std::int64_t{-13}, std::int64_t{17}, kMin, kMax}) {
        const Tensor out = ops::roll(x, shift, axis);
        ASSERT_EQ(out.shape(), shape);
        expect_moved(
            out, x,
            [&](std::int64_t e) {
              std::vector<std::int64_t> c = coordinates(shape, e);
              auto& j = c[static_cast<std::size_t>(axis)];
              j = modulo(j - modulo(shift, n), n);
              return flat_index(shape, c);
            },
            label("roll", dtype, axis, shift));
      }
    }
  }
}

TEST_P(ShapeKernels, RollNegativeAxisCountsFromTheLast) {
  const Tensor x = put(counting_tensor({3, 4, 5}, DType::f64));
  EXPECT_EQ(values_of(ops::roll(x, 2, -1)), values_of(ops::roll(x, 2, 2)));
  EXPECT_EQ(values_of(ops::roll(x, -7, -3)), values_of(ops::roll(x, -7, 0)));
}

TEST_P(ShapeKernels, RollEmptyAndOneElement) {
  const Tensor empty = put(counting_tensor({3, 0, 2}, DType::f32));
  EXPECT_EQ(ops::roll(empty, 5, 1).shape(), empty.shape());
  EXPECT_EQ(ops::roll(empty, -5, 0).shape(), empty.shape());
  const Tensor one = testing::make_tensor({1}, DType::i64, {42});
  EXPECT_EQ(values_of(ops::roll(one, kMin, 0)), std::vector<double>{42});
}

TEST_P(ShapeKernels, PadEveryAxisEveryModeEveryDtype) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = put(counting_tensor(shape, dtype, 1));
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      for (ops::PadMode mode :
           {ops::PadMode::constant, ops::PadMode::periodic, ops::PadMode::reflect}) {
        for (auto [before, after] : std::vector<std::pair<std::int64_t, std::int64_t>>{
                 {0, 0}, {1, 0}, {0, 2}, {2, 1}, {n + 3, 2 * n + 1}}) {
          const Tensor out = ops::pad(x, axis, before, after, mode, 7.0);
          std::vector<std::int64_t> extents(shape.extents().begin(), shape.extents().end());
          extents[static_cast<std::size_t>(axis)] += before + after;
          ASSERT_EQ(out.shape(), Shape(std::span<const std::int64_t>(extents)));
          const std::vector<double> got = values_of(out);
          const std::vector<double> in = values_of(x);
          std::int64_t wrong = 0;
          for (std::int64_t e = 0; e < out.numel(); ++e) {
            std::vector<std::int64_t> c = coordinates(out.shape(), e);
            const std::int64_t k = c[static_cast<std::size_t>(axis)] - before;
            double expected = 7.0;
            if (k >= 0 && k < n) {
              c[static_cast<std::size_t>(axis)] = k;
              expected = in[static_cast<std::size_t>(flat_index(shape, c))];
            } else if (mode != ops::PadMode::constant) {
              c[static_cast<std::size_t>(axis)] = pad_reference(mode, k, n);
              expected = in[static_cast<std::size_t>(flat_index(shape, c))];
            }
            if (got[static_cast<std::size_t>(e)] != expected) ++wrong;
          }
          EXPECT_EQ(wrong, 0) << label("pad", dtype, axis, before, after) << " "
                              << ops::to_string(mode);
        }
      }
    }
  }
}

TEST_P(ShapeKernels, PadGridBoundaries) {
  // Periodic: the ghost before 0 is the last cell; Neumann mirror: -1 reads 0, n reads n - 1.
  const Tensor x = testing::make_tensor({10.0, 20.0, 30.0}, DType::f64);
  EXPECT_EQ(values_of(ops::pad(x, 0, 2, 2, ops::PadMode::periodic)),
            (std::vector<double>{20, 30, 10, 20, 30, 10, 20}));
  EXPECT_EQ(values_of(ops::pad(x, 0, 2, 2, ops::PadMode::reflect)),
            (std::vector<double>{20, 10, 10, 20, 30, 30, 20}));
  EXPECT_EQ(values_of(ops::pad(x, -1, 1, 0, ops::PadMode::constant, -1.5)),
            (std::vector<double>{-1.5, 10, 20, 30}));
}

TEST_P(ShapeKernels, PadEmptyAndOneElement) {
  const Tensor empty = put(counting_tensor({2, 0}, DType::f32));
  const Tensor padded = ops::pad(empty, 1, 1, 2, ops::PadMode::constant, 3.0);
  EXPECT_EQ(values_of(padded), (std::vector<double>{3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(ops::pad(empty, 0, 1, 1, ops::PadMode::periodic).shape(), (Shape{4, 0}));
  EXPECT_EQ(ops::pad(empty, 1, 0, 0, ops::PadMode::reflect).shape(), (Shape{2, 0}));
  const Tensor one = testing::make_tensor({1}, DType::u8, {9});
  EXPECT_EQ(values_of(ops::pad(one, 0, 3, 2, ops::PadMode::reflect)),
            (std::vector<double>{9, 9, 9, 9, 9, 9}));
}

TEST_P(ShapeKernels, ConcatEveryAxisEveryDtype) {
  for (DType dtype : kAllDTypes) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<Tensor> xs;
      std::vector<std::int64_t> starts;
      std::int64_t total = 0;
      for (std::int64_t n : {2, 0, 3, 1}) {
        std::vector<std::int64_t> extents{3, 4, 5};
        extents[static_cast<std::size_t>(axis)] = n;
        xs.push_back(
            put(counting_tensor(Shape(std::span<const std::int64_t>(extents)), dtype, total * 7)));
        starts.push_back(total);
        total += n;
      }
      const Tensor out = ops::concat(xs, axis - 3);  // negative axes, too
      std::vector<std::int64_t> extents{3, 4, 5};
      extents[static_cast<std::size_t>(axis)] = total;
      ASSERT_EQ(out.shape(), Shape(std::span<const std::int64_t>(extents)));
      const std::vector<double> got = values_of(out);
      std::int64_t wrong = 0;
      for (std::int64_t e = 0; e < out.numel(); ++e) {
        std::vector<std::int64_t> c = coordinates(out.shape(), e);
        std::int64_t& j = c[static_cast<std::size_t>(axis)];
        std::size_t k = 0;
        while (j >= starts[k] + xs[k].shape()[axis]) ++k;
        j -= starts[k];
        if (got[static_cast<std::size_t>(e)] !=
            values_of(xs[k])[static_cast<std::size_t>(flat_index(xs[k].shape(), c))]) {
          ++wrong;
        }
      }
      EXPECT_EQ(wrong, 0) << label("concat", dtype, axis, total);
    }
  }
}

TEST_P(ShapeKernels, NarrowEveryAxisEveryDtype) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = put(counting_tensor(shape, dtype, 3));
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      for (auto [begin, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{
               {0, n}, {1, n}, {0, 1}, {n - 1, n}, {1, n - 1}, {2, 2}}) {
        const Tensor out = ops::narrow(x, axis, begin, end);
        ASSERT_EQ(out.shape()[axis], end - begin);
        expect_moved(
            out, x,
            [&, begin = begin](std::int64_t e) {
              std::vector<std::int64_t> c = coordinates(out.shape(), e);
              c[static_cast<std::size_t>(axis)] += begin;
              return flat_index(shape, c);
            },
            label("narrow", dtype, axis, begin, end));
      }
    }
  }
}

TEST_P(ShapeKernels, PermuteEveryPermutationEveryDtype) {
  const Shape shape{3, 4, 5};
  const std::vector<std::vector<int>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                               {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType dtype : kAllDTypes) {
    const Tensor x = put(counting_tensor(shape, dtype, 5));
    for (const std::vector<int>& dims : perms) {
      const Tensor out = ops::permute(x, dims);
      for (int d = 0; d < 3; ++d)
        ASSERT_EQ(out.shape()[d], shape[dims[static_cast<std::size_t>(d)]]);
      expect_moved(
          out, x,
          [&](std::int64_t e) {
            const std::vector<std::int64_t> c = coordinates(out.shape(), e);
            std::vector<std::int64_t> source(3);
            for (int d = 0; d < 3; ++d) {
              source[static_cast<std::size_t>(dims[static_cast<std::size_t>(d)])] =
                  c[static_cast<std::size_t>(d)];
            }
            return flat_index(shape, source);
          },
          label("permute", dtype, dims[0], dims[1], dims[2]));
    }
  }
}

TEST_P(ShapeKernels, PermuteTransposeRankOneScalarEmpty) {
  const Tensor m = testing::make_tensor({2, 3}, DType::f32, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of(ops::transpose(m, 0, 1)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values_of(ops::transpose(m, -1, -2)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values_of(ops::permute(testing::make_tensor({1.0, 2.0}, DType::f64), {-1})),
            (std::vector<double>{1, 2}));
  const Tensor scalar = testing::make_tensor(Shape{}, DType::f64, {3.5});
  EXPECT_EQ(values_of(ops::permute(scalar, {})), std::vector<double>{3.5});
  EXPECT_EQ(ops::permute(put(counting_tensor({2, 0, 3}, DType::u8)), {2, 0, 1}).shape(),
            (Shape{3, 2, 0}));
}

// The _into forms write the out they are given (a slice of a larger tensor) with the allocating
// forms' bits, and nothing beside it.
TEST_P(ShapeKernels, IntoFormsWriteTheirOutputOnly) {
  const Tensor x = put(counting_tensor({3, 4, 5}, DType::f32, 7));
  expect_into_writes_its_output_only("roll_into", ops::roll(x, 2, 1),
                                     [&](const Tensor& out) { ops::roll_into(x, 2, 1, out); });
  expect_into_writes_its_output_only(
      "pad_into", ops::pad(x, 2, 1, 2, ops::PadMode::reflect),
      [&](const Tensor& out) { ops::pad_into(x, 2, 1, 2, ops::PadMode::reflect, 0.0, out); });
  expect_into_writes_its_output_only("concat_into", ops::concat({x, x}, 1), [&](const Tensor& out) {
    ops::concat_into({x, x}, 1, out);
  });
  expect_into_writes_its_output_only("narrow_into", ops::narrow(x, 2, 1, 4),
                                     [&](const Tensor& out) { ops::narrow_into(x, 2, 1, 4, out); });
  expect_into_writes_its_output_only("permute_into", ops::permute(x, {2, 0, 1}),
                                     [&](const Tensor& out) {
                                       ops::permute_into(x, {2, 0, 1}, out);
                                     });
}

}  // namespace tenax::shape_cases
