// Reductions along an axis (ops_reduce_axis.hpp) written once for every backend
// (backend_test.hpp), against the documented order (reduction_order.hpp) folded by hand: every
// axis of a 3-D tensor, lines over several reduction blocks, a line that is the whole tensor,
// NaN and half precision, empty lines and outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_reduce_axis.hpp"
#include "tenax/kernels/reduction_order.hpp"

namespace tenax::reduce_axis_cases {

using testing::coordinates;
using testing::expect_contains;
using testing::flat_index;
using testing::usage_error;
using testing::values_of;

inline constexpr ops::AxisReduction kReductions[] = {
    ops::AxisReduction::sum, ops::AxisReduction::max, ops::AxisReduction::min,
    ops::AxisReduction::mean};

struct Plus {
  static double identity() { return 0.0; }
  double operator()(double a, double b) const { return a + b; }
};
struct Max {
  static double identity() { return -std::numeric_limits<double>::infinity(); }
  double operator()(double a, double b) const { return (std::isnan(a) || a > b) ? a : b; }
};
struct Min {
  static double identity() { return std::numeric_limits<double>::infinity(); }
  double operator()(double a, double b) const { return (std::isnan(a) || a < b) ? a : b; }
};

// reduction_order.hpp steps 1-4 over `line`.
template <class F>
inline double ordered_fold(const std::vector<double>& line, F f) {
  const auto n = static_cast<std::int64_t>(line.size());
  std::vector<double> partials;
  for (std::int64_t first = 0; first < n; first += kernels::kReduceBlock) {
    const std::int64_t last = std::min(n, first + kernels::kReduceBlock);
    std::vector<double> lanes(kernels::kReduceLanes, F::identity());
    for (int j = 0; j < kernels::kReduceLanes; ++j) {
      for (std::int64_t k = first + j; k < last; k += kernels::kReduceLanes) {
        lanes[static_cast<std::size_t>(j)] =
            f(lanes[static_cast<std::size_t>(j)], line[static_cast<std::size_t>(k)]);
      }
    }
    for (int s = kernels::kReduceLanes / 2; s >= 1; s /= 2) {
      for (int j = 0; j < s; ++j) {
        lanes[static_cast<std::size_t>(j)] =
            f(lanes[static_cast<std::size_t>(j)], lanes[static_cast<std::size_t>(j + s)]);
      }
    }
    partials.push_back(lanes[0]);
  }
  return kernels::combine_partials(partials.data(), static_cast<std::int64_t>(partials.size()), f);
}

inline double reference(ops::AxisReduction op, const std::vector<double>& line) {
  switch (op) {
    case ops::AxisReduction::sum:
      return ordered_fold(line, Plus{});
    case ops::AxisReduction::mean:
      return ordered_fold(line, Plus{}) / static_cast<double>(line.size());
    case ops::AxisReduction::max:
      return ordered_fold(line, Max{});
    case ops::AxisReduction::min:
      return ordered_fold(line, Min{});
  }
  return 0.0;
}

// reduce(op, x, axis) against the reference, rounded once to x's dtype (f64 or f32 here).
inline void expect_reference(ops::AxisReduction op, const Tensor& x, int axis,
                             const std::string& what) {
  const Tensor out = ops::reduce(op, x, axis, /*keepdim=*/true);
  const std::vector<double> in = values_of(x);
  const std::vector<double> got = values_of(out);
  const std::int64_t n = x.shape()[axis];
  std::int64_t wrong = 0;
  for (std::int64_t e = 0; e < out.numel(); ++e) {
    std::vector<std::int64_t> c = coordinates(out.shape(), e);
    std::vector<double> line;
    for (std::int64_t k = 0; k < n; ++k) {
      c[static_cast<std::size_t>(axis)] = k;
      line.push_back(in[static_cast<std::size_t>(flat_index(x.shape(), c))]);
    }
    const double expected = testing::round_to(x.dtype(), reference(op, line));
    if (testing::bits(expected) != testing::bits(got[static_cast<std::size_t>(e)]) &&
        !(std::isnan(expected) && std::isnan(got[static_cast<std::size_t>(e)])) && wrong++ < 3) {
      ADD_FAILURE() << what << ": output " << e << " is " << got[static_cast<std::size_t>(e)]
                    << ", expected " << expected;
    }
  }
  EXPECT_EQ(wrong, 0) << what;
}

inline std::string label(ops::AxisReduction op, DType dtype, const Shape& shape, int axis) {
  return std::string(ops::to_string(op)) + " " + std::string(to_string(dtype)) + " " +
         to_string(shape) + " axis " + std::to_string(axis);
}

class ReduceAxisKernels : public testing::BackendTest {};

TEST_P(ReduceAxisKernels, EveryAxisOfA3dTensor) {
  const Shape shape{3, 4, 5};
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor x = put(testing::uniform_tensor(shape, dtype, 3, -2.0, 2.0));
    for (ops::AxisReduction op : kReductions) {
      for (int axis = 0; axis < 3; ++axis)
        expect_reference(op, x, axis, label(op, dtype, shape, axis));
    }
  }
}

TEST_P(ReduceAxisKernels, LongLinesSpanSeveralBlocks) {
  // 5 blocks and a short one (an odd partial carried up), along the middle and the last axis.
  const std::int64_t n = 5 * kernels::kReduceBlock + 17;
  for (const Shape& shape : {Shape{2, n, 3}, Shape{3, n}}) {
    const int axis = shape.rank() == 3 ? 1 : -1;
    const Tensor x = put(testing::uniform_tensor(shape, DType::f64, 11, -1.0, 1.0));
    for (ops::AxisReduction op : kReductions) {
      expect_reference(op, x, axis < 0 ? axis + shape.rank() : axis,
                       label(op, DType::f64, shape, axis));
    }
  }
}

TEST_P(ReduceAxisKernels, OneDimensionalLineIsTheWholeTensorReduction) {
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, 3 * kernels::kReduceBlock + 5}) {
    const Tensor x = put(testing::uniform_tensor({n}, DType::f64, 5, -1.0, 1.0));
    EXPECT_EQ(testing::bits(values_of(ops::sum_along(x, 0))[0]), testing::bits(ops::sum(x)));
    EXPECT_EQ(testing::bits(values_of(ops::max_along(x, -1))[0]), testing::bits(ops::max(x)));
    EXPECT_EQ(ops::sum_along(x, 0).shape(), Shape{});
    EXPECT_EQ(ops::sum_along(x, 0, true).shape(), Shape{1});
  }
}

TEST_P(ReduceAxisKernels, NaNAndHalfPrecision) {
  Tensor x = put(testing::make_tensor({2, 3}, DType::f64, {1, std::nan(""), 3, 4, 5, 6}));
  EXPECT_TRUE(std::isnan(values_of(ops::max_along(x, 1))[0]));
  EXPECT_TRUE(std::isnan(values_of(ops::min_along(x, 1))[0]));
  EXPECT_EQ(values_of(ops::max_along(x, 1))[1], 6.0);
  EXPECT_EQ(values_of(ops::min_along(x, 0))[0], 1.0);
  // f16: the f64 sum rounded once (1 + 2^-11 + 2^-24 rounds up, twice-rounded it would not).
  const Tensor h = put(
      testing::make_tensor({3, 1}, DType::f16, {1.0, std::ldexp(1.0, -11), std::ldexp(1.0, -24)}));
  EXPECT_EQ(values_of(ops::sum_along(h, 0))[0], 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(values_of(ops::mean_along(put(testing::make_tensor({1.0, 2.0}, DType::bf16)), 0))[0],
            1.5);
}

TEST_P(ReduceAxisKernels, EmptyLinesAndEmptyOutputs) {
  const Tensor x = Tensor::empty({3, 0}, DType::f32, device());
  EXPECT_EQ(values_of(ops::sum_along(x, 1)), (std::vector<double>{0, 0, 0}));
  for (double v : values_of(ops::mean_along(x, 1))) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(ops::max_along(x, 0).shape(), (Shape{0}));  // no output, nothing to refuse
  expect_contains(usage_error([&] { (void)ops::max_along(x, 1); }),
                  {"reduce(max)", "axis 1", "is empty", "no value"});
  expect_contains(usage_error([&] { (void)ops::min_along(x, -1); }), {"reduce(min)"});
}

// reduce_into writes the out it is given (a slice of a larger tensor) with reduce's bits, and
// nothing beside it.
TEST_P(ReduceAxisKernels, ReduceIntoWritesItsOutputOnly) {
  const Tensor x = random({5, 6, 7}, DType::f32, 11);
  for (const ops::AxisReduction op : {ops::AxisReduction::sum, ops::AxisReduction::max}) {
    expect_into_writes_its_output_only("reduce_into", ops::reduce(op, x, 1),
                                       [&](const Tensor& out) { ops::reduce_into(op, x, 1, out); });
  }
}

}  // namespace tenax::reduce_axis_cases
