// compare and where (ops_select.hpp) written once for every backend (backend_test.hpp), against
// plain C++ comparisons: every dtype, NaN and signed zeros, masks with values other than 0 and 1.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_select.hpp"

namespace tenax::select_cases {

using testing::make_tensor;
using testing::values_of;

inline constexpr ops::CompareOp kCompareOps[] = {ops::CompareOp::eq, ops::CompareOp::ne,
                                                 ops::CompareOp::lt, ops::CompareOp::le,
                                                 ops::CompareOp::gt, ops::CompareOp::ge};

inline bool reference(ops::CompareOp op, double a, double b) {
  switch (op) {
    case ops::CompareOp::eq:
      return a == b;
    case ops::CompareOp::ne:
      return a != b;
    case ops::CompareOp::lt:
      return a < b;
    case ops::CompareOp::le:
      return a <= b;
    case ops::CompareOp::gt:
      return a > b;
    case ops::CompareOp::ge:
      return a >= b;
  }
  return false;
}

class SelectKernels : public testing::BackendTest {};

TEST_P(SelectKernels, CompareEveryOpEveryDtype) {
  const std::vector<double> av = {0, 1, 2, 3, 5, 7, 100, 4, 9};
  const std::vector<double> bv = {0, 2, 1, 3, 6, 7, 99, 4, 10};
  for (DType dtype : kAllDTypes) {
    const Tensor a = put(make_tensor({3, 3}, dtype, av));
    const Tensor b = put(make_tensor({3, 3}, dtype, bv));
    for (ops::CompareOp op : kCompareOps) {
      const Tensor out = ops::compare(op, a, b);
      ASSERT_EQ(out.dtype(), DType::u8);
      ASSERT_EQ(out.shape(), a.shape());
      std::vector<double> expected;
      for (std::size_t i = 0; i < av.size(); ++i) expected.push_back(reference(op, av[i], bv[i]));
      EXPECT_EQ(values_of(out), expected) << ops::to_string(op) << " " << to_string(dtype);
    }
  }
}

TEST_P(SelectKernels, CompareNaNAndSignedZeros) {
  const double nan = std::nan("");
  const std::vector<double> av = {nan, 1.0, nan, -0.0, 1e-30};
  const std::vector<double> bv = {nan, nan, 1.0, 0.0, 0.0};
  for (DType dtype : kFloatDTypes) {
    const Tensor a = put(make_tensor(av, dtype));
    const Tensor b = put(make_tensor(bv, dtype));
    for (ops::CompareOp op : kCompareOps) {
      std::vector<double> expected;
      for (std::size_t i = 0; i < av.size(); ++i) {
        expected.push_back(
            reference(op, testing::round_to(dtype, av[i]), testing::round_to(dtype, bv[i])));
      }
      EXPECT_EQ(values_of(ops::compare(op, a, b)), expected)
          << ops::to_string(op) << " " << to_string(dtype);
    }
  }
  EXPECT_EQ(
      values_of(ops::eq(put(make_tensor({-0.0}, DType::f64)), put(make_tensor({0.0}, DType::f64)))),
      std::vector<double>{1});
  EXPECT_EQ(
      values_of(ops::ne(put(make_tensor({nan}, DType::f32)), put(make_tensor({nan}, DType::f32)))),
      std::vector<double>{1});
}

TEST_P(SelectKernels, WhereEveryDtypeAnyNonzeroIsTrue) {
  const Tensor cond = put(make_tensor({2, 3}, DType::u8, {1, 0, 2, 255, 0, 0}));
  for (DType dtype : kAllDTypes) {
    const Tensor a = put(make_tensor({2, 3}, dtype, {1, 2, 3, 4, 5, 6}));
    const Tensor b = put(make_tensor({2, 3}, dtype, {10, 20, 30, 40, 50, 60}));
    EXPECT_EQ(values_of(ops::where(cond, a, b)), (std::vector<double>{1, 20, 3, 4, 50, 60}))
        << to_string(dtype);
    ops::where_into(cond, a, b, b);  // in place
    EXPECT_EQ(values_of(b), (std::vector<double>{1, 20, 3, 4, 50, 60})) << to_string(dtype);
  }
  // Bits are copied: a NaN's payload and -0 survive.
  const Tensor a = put(make_tensor({-0.0, std::nan("")}, DType::f64));
  const Tensor picked = ops::where(put(make_tensor({1.0, 1.0}, DType::u8)), a,
                                   put(make_tensor({1.0, 1.0}, DType::f64)));
  EXPECT_TRUE(same(picked, a));
  EXPECT_EQ(
      ops::where(Tensor::empty({0}, DType::u8, device()), Tensor::empty({0}, DType::f32, device()),
                 Tensor::empty({0}, DType::f32, device()))
          .numel(),
      0);
}

// compare_into and where_into write the out they are given (a slice of a larger tensor) with the
// allocating forms' bits, and nothing beside it.
TEST_P(SelectKernels, IntoFormsWriteTheirOutputOnly) {
  const Tensor a = put(make_tensor({2, 3}, DType::f32, {1, -2, 3, 4, 0, 6}));
  const Tensor b = put(make_tensor({2, 3}, DType::f32, {1, 2, -3, 5, 0, -6}));
  expect_into_writes_its_output_only(
      "compare_into", ops::compare(ops::CompareOp::gt, a, b),
      [&](const Tensor& out) { ops::compare_into(ops::CompareOp::gt, a, b, out); });
  const Tensor cond = ops::compare(ops::CompareOp::le, a, b);
  expect_into_writes_its_output_only("where_into", ops::where(cond, a, b),
                                     [&](const Tensor& out) { ops::where_into(cond, a, b, out); });
}

}  // namespace tenax::select_cases
