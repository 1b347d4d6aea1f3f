// broadcast_binary and sum_to written once for every backend (backend_test.hpp): the NumPy
// broadcast of every op, dtype and shape against binary on operands expanded by copying, large
// bias additions with NaN, equal shapes giving binary's bits, an output that is an input; sum_to
// against a naive f64 loop rounded once, in row-major order, to every dtype, empty inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/broadcast_kernels.hpp"
#include "tenax/kernels/ops_broadcast.hpp"

namespace tenax::broadcast_cases {

using testing::get_value;
using testing::make_tensor;
using testing::uniform_tensor;
using testing::values_of;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline constexpr ops::BinaryOp kBinaryOps[] = {ops::BinaryOp::add,     ops::BinaryOp::sub,
                                               ops::BinaryOp::mul,     ops::BinaryOp::div,
                                               ops::BinaryOp::maximum, ops::BinaryOp::minimum};

inline std::vector<std::int64_t> extents_of(const Shape& s) {
  return {s.extents().begin(), s.extents().end()};
}

// The flat index in `from` (which broadcasts to `to`) of the element that element `i` of a
// tensor of shape `to` reads.
inline std::int64_t source_index(const Shape& from, const Shape& to, std::int64_t i) {
  std::int64_t index = 0;
  std::int64_t stride = 1;
  for (int k = 0; k < to.rank(); ++k) {
    const int axis = to.rank() - 1 - k;
    const std::int64_t coordinate = i % to[axis];
    i /= to[axis];
    if (k < from.rank()) {
      const std::int64_t extent = from[from.rank() - 1 - k];
      if (extent != 1) index += coordinate * stride;
      stride *= extent;
    }
  }
  return index;
}

// `t` (on any device) expanded to `shape` by copying elements (same dtype, bits kept), on the CPU.
inline Tensor expand(const Tensor& on_device, const Shape& shape) {
  const Tensor t = on_device.to(Device::cpu());
  Tensor out = Tensor::empty(shape, t.dtype());
  const std::size_t size = size_of(t.dtype());
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::memcpy(static_cast<char*>(out.data()) + i * size,
                static_cast<const char*>(t.data()) + source_index(t.shape(), shape, i) * size,
                size);
  }
  return out;
}

// The same shape, dtype and bytes, for tensors on any devices.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.shape() == hb.shape() && ha.dtype() == hb.dtype() &&
         std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

// `value` rounded once (to nearest, ties to even) to `dtype`. For f16/bf16 the rounding through
// f32 lands on one of the two neighbours of `value`; pick the nearer one (ties: even pattern).
inline double round_once(DType dtype, double value) {
  if (dtype == DType::f64) return value;
  if (dtype == DType::f32) return static_cast<float>(value);
  const double through = testing::round_to(dtype, value);
  if (through == value || !std::isfinite(through) || std::isnan(value)) return through;
  auto bits_of16 = [&](double v) -> std::uint16_t {
    return dtype == DType::f16 ? float_to_half_bits(static_cast<float>(v))
                               : float_to_bf16_bits(static_cast<float>(v));
  };
  auto value_of16 = [&](std::uint16_t b) -> double {
    return dtype == DType::f16 ? half_bits_to_float(b) : bf16_bits_to_float(b);
  };
  // The neighbour on the other side of `value`, one pattern away.
  const std::uint16_t b = bits_of16(through);
  const bool away = std::fabs(through) > std::fabs(value);
  const std::uint16_t other_bits =
      static_cast<std::uint16_t>(away ? b - 1 : b + 1);  // magnitude one step toward value
  const double other = value_of16(other_bits);
  const double d1 = std::fabs(through - value);
  const double d2 = std::fabs(other - value);
  if (d1 < d2) return through;
  if (d2 < d1) return other;
  return (b & 1u) == 0 ? through : other;
}

// The naive reference of sum_to: one f64 accumulator per output, x visited in row-major order.
inline std::vector<double> naive_sum_to(const Tensor& on_device, const Shape& shape) {
  const Tensor x = on_device.to(Device::cpu());
  std::vector<double> sums(static_cast<std::size_t>(shape.numel()), 0.0);
  // The output an x element belongs to: the x coordinates with the reduced axes dropped.
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    std::int64_t rest = i;
    std::int64_t out = 0;
    std::int64_t stride = 1;
    for (int k = 0; k < x.shape().rank(); ++k) {
      const int axis = x.shape().rank() - 1 - k;
      const std::int64_t coordinate = rest % x.shape()[axis];
      rest /= x.shape()[axis];
      if (k < shape.rank()) {
        const std::int64_t extent = shape[shape.rank() - 1 - k];
        if (extent != 1) out += coordinate * stride;
        stride *= extent;
      }
    }
    sums[static_cast<std::size_t>(out)] += get_value(x, i);
  }
  for (double& s : sums) s = round_once(x.dtype(), s);
  return sums;
}

// The shape pairs broadcast_binary is checked on.
struct Case {
  Shape a;
  Shape b;
};

inline const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {{5, 7}, {7}},
      {{5, 7}, {5, 1}},
      {{1}, {5, 7}},
      {{7}, {5, 7}},
      {{5, 1}, {1, 7}},
      {{3, 4, 5}, {4, 5}},
      {{3, 4, 5}, {3, 1, 5}},
      {{3, 1, 5}, {4, 1}},
      {{3, 4, 5}, {1}},
      {{2, 1, 3, 1}, {4, 1, 5}},
      {{6}, Shape{}},
      {{1, 1}, {1}},
      {{2, 3, 1, 2, 1, 2, 1, 2}, {3, 2, 2, 2, 3, 1}},
  };
  return all;
}

// The (x, target) shape pairs sum_to is checked on.
struct SumCase {
  Shape x;
  Shape target;
};

inline const std::vector<SumCase>& sum_cases() {
  static const std::vector<SumCase> all = {
      {{37, 29}, {29}},
      {{37, 29}, {1, 29}},
      {{37, 29}, {37, 1}},
      {{37, 29}, {1}},
      {{37, 29}, Shape{}},
      {{37, 29}, {37, 29}},
      {{5, 6, 7}, {6, 1}},
      {{5, 6, 7}, {5, 1, 7}},
      {{5, 6, 7}, {1, 6, 1}},
      {{5, 6, 7}, {7}},
      {{4, 1, 6}, {1, 6}},
      {{2, 3, 4, 5}, {3, 1, 5}},
      {{2, 3, 4, 5}, {2, 1, 4, 1}},
      {{3, 200}, {200}},
      {{200, 3}, {200, 1}},
  };
  return all;
}

class BroadcastKernels : public testing::BackendTest {};

TEST_P(BroadcastKernels, BroadcastBinaryEveryOpDtypeAndShapeEqualsBinaryOnExpandedOperands) {
  unsigned seed = 1;
  for (const Case& c : cases()) {
    const Shape shape = ops::broadcast_shape(c.a, c.b);
    for (DType dtype : kFloatDTypes) {
      const Tensor a = put(uniform_tensor(c.a, dtype, seed++, -4.0, 4.0));
      const Tensor b = put(uniform_tensor(c.b, dtype, seed++, -4.0, 4.0));
      const Tensor ea = expand(a, shape);
      const Tensor eb = expand(b, shape);
      for (ops::BinaryOp op : kBinaryOps) {
        const Tensor out = ops::broadcast_binary(op, a, b);
        EXPECT_TRUE(same_bits(out, ops::binary(op, ea, eb)))
            << ops::to_string(op) << " " << to_string(dtype) << " " << to_string(c.a) << " with "
            << to_string(c.b);
      }
    }
  }
}

// Large enough to split the rows over threads; NaNs propagate as in ops::binary.
TEST_P(BroadcastKernels, BroadcastBinaryLargeBiasAddAndNaN) {
  for (DType dtype : kFloatDTypes) {
    Tensor x = put(uniform_tensor({1000, 301}, dtype, 7, -4.0, 4.0));
    Tensor bias = put(uniform_tensor({301}, dtype, 8, -4.0, 4.0));
    set_at(bias, 17, kNaN);
    set_at(x, 5 * 301 + 3, kNaN);
    const Tensor eb = expand(bias, x.shape());
    for (ops::BinaryOp op : {ops::BinaryOp::add, ops::BinaryOp::maximum}) {
      EXPECT_TRUE(same_bits(ops::broadcast_binary(op, x, bias), ops::binary(op, x, eb)))
          << to_string(dtype);
      EXPECT_TRUE(same_bits(ops::broadcast_binary(op, bias, x), ops::binary(op, eb, x)))
          << to_string(dtype);
    }
    const Tensor col = put(uniform_tensor({1000, 1}, dtype, 9, -4.0, 4.0));
    EXPECT_TRUE(same_bits(ops::broadcast_binary(ops::BinaryOp::div, x, col),
                          ops::binary(ops::BinaryOp::div, x, expand(col, x.shape()))));
  }
}

TEST_P(BroadcastKernels, BroadcastBinaryEqualShapesGiveTheBitsOfBinary) {
  for (DType dtype : kFloatDTypes) {
    Tensor a = put(uniform_tensor({4, 33}, dtype, 3, -4.0, 4.0));
    Tensor b = put(uniform_tensor({4, 33}, dtype, 4, -4.0, 4.0));
    set_at(a, 5, kNaN);
    set_at(b, 0, 0.0);
    for (ops::BinaryOp op : kBinaryOps) {
      EXPECT_TRUE(same_bits(ops::broadcast_binary(op, a, b), ops::binary(op, a, b)));
    }
  }
}

TEST_P(BroadcastKernels, BroadcastBinaryIntoAnOutputThatIsAnInput) {
  Tensor x = put(uniform_tensor({6, 5}, DType::f32, 11, -4.0, 4.0));
  const Tensor bias = put(uniform_tensor({5}, DType::f32, 12, -4.0, 4.0));
  const Tensor expected = ops::binary(ops::BinaryOp::add, x, expand(bias, x.shape()));
  ops::broadcast_binary_into(ops::BinaryOp::add, x, bias, x);  // x += bias, in place
  EXPECT_TRUE(same_bits(x, expected));
  Tensor out = Tensor::empty({6, 5}, DType::f32, device());
  ops::broadcast_binary_into(ops::BinaryOp::sub, bias, x, out);
  EXPECT_TRUE(same_bits(out, ops::binary(ops::BinaryOp::sub, expand(bias, x.shape()), x)));
  // Empty broadcast: nothing to do.
  const Tensor none =
      ops::broadcast_binary(ops::BinaryOp::mul, Tensor::empty({0, 5}, DType::f32, device()), bias);
  EXPECT_EQ(none.shape(), (Shape{0, 5}));
}

TEST_P(BroadcastKernels, SumToEqualsANaiveF64LoopRoundedOnceInEveryDtype) {
  unsigned seed = 100;
  for (const SumCase& c : sum_cases()) {
    for (DType dtype : kFloatDTypes) {
      const Tensor x = put(uniform_tensor(c.x, dtype, seed++, -4.0, 4.0));
      const Tensor out = ops::sum_to(x, c.target);
      ASSERT_EQ(out.shape(), c.target);
      ASSERT_EQ(out.dtype(), dtype);
      const std::vector<double> expected = naive_sum_to(x, c.target);
      const std::vector<double> got = values_of(out);
      for (std::size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(got[i], expected[i]) << to_string(dtype) << " " << to_string(c.x) << " -> "
                                       << to_string(c.target) << " at " << i;
      }
    }
  }
}

// Large: the bias gradient of a batch (tiled on the CPU) and row sums, split over threads.
TEST_P(BroadcastKernels, SumToLargeBiasGradientAndRowSums) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    const Tensor x = put(uniform_tensor({2000, 129}, dtype, 5, -4.0, 4.0));
    const std::vector<double> bias = values_of(ops::sum_to(x, {129}));
    EXPECT_EQ(bias, naive_sum_to(x, {129})) << to_string(dtype);
    const std::vector<double> rows = values_of(ops::sum_to(x, {2000, 1}));
    EXPECT_EQ(rows, naive_sum_to(x, {2000, 1})) << to_string(dtype);
  }
}

// The inputs are added one after the other in row-major order (not pairwise).
TEST_P(BroadcastKernels, SumToSequentialRowMajorOrder) {
  const Tensor x = put(make_tensor({4, 1}, DType::f64, {1e16, 1.0, -1e16, 1.0}));
  EXPECT_EQ(value_at(ops::sum_to(x, {1}), 0), 1.0);  // ((1e16 + 1) - 1e16) + 1
  const Tensor y = put(make_tensor({2, 2}, DType::f64, {1e16, -1e16, 1.0, 1.0}));
  EXPECT_EQ(values_of(ops::sum_to(y, {2})), (std::vector<double>{1e16 + 1.0, -1e16 + 1.0}));
}

// f16 and bf16 outputs are rounded once from the f64 sum: through f32 they would round twice.
TEST_P(BroadcastKernels, SumToRoundsOnceToSixteenBits) {
  // 1 + 2^-11 + 2^-24: f32 rounds it to 1 + 2^-11 (a tie), which f16 rounds to 1 (even).
  const Tensor h =
      put(make_tensor({3}, DType::f16, {1.0, std::ldexp(1.0, -11), std::ldexp(1.0, -24)}));
  EXPECT_EQ(value_at(ops::sum_to(h, Shape{}), 0), 1.0 + std::ldexp(1.0, -10));
  // 1 + 2^-8 + 2^-30 for bf16 (8 significant bits).
  const Tensor b =
      put(make_tensor({3}, DType::bf16, {1.0, std::ldexp(1.0, -8), std::ldexp(1.0, -30)}));
  EXPECT_EQ(value_at(ops::sum_to(b, {1}), 0), 1.0 + std::ldexp(1.0, -7));
  // Negative and exact cases are untouched.
  const Tensor n =
      put(make_tensor({3}, DType::bf16, {-1.0, -std::ldexp(1.0, -8), -std::ldexp(1.0, -30)}));
  EXPECT_EQ(value_at(ops::sum_to(n, {1}), 0), -(1.0 + std::ldexp(1.0, -7)));
  const Tensor e = put(make_tensor({2}, DType::f16, {0.5, 0.25}));
  EXPECT_EQ(value_at(ops::sum_to(e, {1}), 0), 0.75);
}

TEST_P(BroadcastKernels, SumToEmptyInputsGiveZeros) {
  const Tensor x = Tensor::empty({0, 4}, DType::f32, device());
  EXPECT_EQ(values_of(ops::sum_to(x, {4})), (std::vector<double>(4, 0.0)));
  EXPECT_EQ(ops::sum_to(x, {1, 4}).shape(), (Shape{1, 4}));
  EXPECT_EQ(ops::sum_to(x, {0, 4}).numel(), 0);
}

// broadcast_binary_into and sum_to_into write the out they are given (a slice of a larger tensor)
// with the allocating forms' bits, and nothing beside it.
TEST_P(BroadcastKernels, IntoFormsWriteTheirOutputOnly) {
  const Tensor a = put(uniform_tensor({4, 1, 5}, DType::f32, 3, -2, 2));
  const Tensor b = put(uniform_tensor({3, 1}, DType::f32, 4, -2, 2));
  expect_into_writes_its_output_only(
      "broadcast_binary_into", ops::broadcast_binary(ops::BinaryOp::mul, a, b),
      [&](const Tensor& out) { ops::broadcast_binary_into(ops::BinaryOp::mul, a, b, out); });
  const Tensor x = put(uniform_tensor({6, 3, 5}, DType::f32, 5, -2, 2));
  expect_into_writes_its_output_only("sum_to_into", ops::sum_to(x, {3, 1}),
                                     [&](const Tensor& out) { ops::sum_to_into(x, out); });
}

}  // namespace tenax::broadcast_cases
