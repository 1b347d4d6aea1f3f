// compare and where (ops_select.hpp) on the CPU backend, the reference for the CUDA backend,
// against plain C++ comparisons: every dtype, NaN and signed zeros, masks with values other than
// 0 and 1, in-place where, empty tensors and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/kernels/ops_select.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::make_tensor;
using testing::usage_error;
using testing::values_of;

constexpr ops::CompareOp kCompareOps[] = {ops::CompareOp::eq, ops::CompareOp::ne,
                                          ops::CompareOp::lt, ops::CompareOp::le,
                                          ops::CompareOp::gt, ops::CompareOp::ge};

bool reference(ops::CompareOp op, double a, double b) {
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

TEST(Compare, EveryOpEveryDtype) {
  const std::vector<double> av = {0, 1, 2, 3, 5, 7, 100, 4, 9};
  const std::vector<double> bv = {0, 2, 1, 3, 6, 7, 99, 4, 10};
  for (DType dtype : kAllDTypes) {
    const Tensor a = make_tensor({3, 3}, dtype, av);
    const Tensor b = make_tensor({3, 3}, dtype, bv);
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

TEST(Compare, NaNAndSignedZeros) {
  const double nan = std::nan("");
  const std::vector<double> av = {nan, 1.0, nan, -0.0, 1e-30};
  const std::vector<double> bv = {nan, nan, 1.0, 0.0, 0.0};
  for (DType dtype : kFloatDTypes) {
    const Tensor a = make_tensor(av, dtype);
    const Tensor b = make_tensor(bv, dtype);
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
  EXPECT_EQ(values_of(ops::eq(make_tensor({-0.0}, DType::f64), make_tensor({0.0}, DType::f64))),
            std::vector<double>{1});
  EXPECT_EQ(values_of(ops::ne(make_tensor({nan}, DType::f32), make_tensor({nan}, DType::f32))),
            std::vector<double>{1});
}

TEST(Compare, ShorthandsEmptyInPlaceErrors) {
  const Tensor a = make_tensor({1.0, 2.0, 3.0}, DType::i64);
  const Tensor b = make_tensor({2.0, 2.0, 2.0}, DType::i64);
  EXPECT_EQ(values_of(ops::lt(a, b)), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values_of(ops::le(a, b)), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(values_of(ops::gt(a, b)), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(values_of(ops::ge(a, b)), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(ops::eq(Tensor::empty({0, 3}, DType::f32), Tensor::empty({0, 3}, DType::f32)).shape(),
            (Shape{0, 3}));
  const Tensor m = make_tensor({1.0, 5.0, 3.0}, DType::u8);
  ops::compare_into(ops::CompareOp::gt, m, make_tensor({2.0, 2.0, 2.0}, DType::u8), m);
  EXPECT_EQ(values_of(m), (std::vector<double>{0, 1, 1}));
  expect_contains(usage_error([&] {
                    (void)ops::eq(a, make_tensor({1.0, 2.0}, DType::i64));
                  }),
                  {"compare(eq)", "shape"});
  expect_contains(usage_error([&] {
                    (void)ops::eq(a, make_tensor({1.0, 2.0, 3.0}, DType::f64));
                  }),
                  {"compare(eq)", "b is f64"});
  expect_contains(usage_error([&] {
                    ops::compare_into(ops::CompareOp::eq, a, b, Tensor::empty({3}, DType::i64));
                  }),
                  {"compare(eq)", "dtype u8"});
  const Tensor wide = Tensor::empty({8}, DType::u8);
  expect_contains(usage_error([&] {
                    ops::compare_into(ops::CompareOp::eq, wide.slice(0, 4), wide.slice(4, 8),
                                      wide.slice(2, 6));
                  }),
                  {"compare(eq)", "overlaps a"});
}

TEST(Where, EveryDtypeAnyNonzeroIsTrue) {
  const Tensor cond = make_tensor({2, 3}, DType::u8, {1, 0, 2, 255, 0, 0});
  for (DType dtype : kAllDTypes) {
    const Tensor a = make_tensor({2, 3}, dtype, {1, 2, 3, 4, 5, 6});
    const Tensor b = make_tensor({2, 3}, dtype, {10, 20, 30, 40, 50, 60});
    EXPECT_EQ(values_of(ops::where(cond, a, b)), (std::vector<double>{1, 20, 3, 4, 50, 60}))
        << to_string(dtype);
    ops::where_into(cond, a, b, b);  // in place
    EXPECT_EQ(values_of(b), (std::vector<double>{1, 20, 3, 4, 50, 60})) << to_string(dtype);
  }
  // Bits are copied: a NaN's payload and -0 survive.
  const Tensor a = make_tensor({-0.0, std::nan("")}, DType::f64);
  const Tensor picked =
      ops::where(make_tensor({1.0, 1.0}, DType::u8), a, make_tensor({1.0, 1.0}, DType::f64));
  EXPECT_TRUE(testing::same_bytes(picked, a));
  EXPECT_EQ(ops::where(Tensor::empty({0}, DType::u8), Tensor::empty({0}, DType::f32),
                       Tensor::empty({0}, DType::f32))
                .numel(),
            0);
}

TEST(Where, Errors) {
  const Tensor a = make_tensor({1.0, 2.0}, DType::f32);
  const Tensor b = make_tensor({3.0, 4.0}, DType::f32);
  expect_contains(usage_error([&] {
                    (void)ops::where(make_tensor({1.0, 0.0}, DType::i32), a, b);
                  }),
                  {"where", "cond is i32", "u8"});
  expect_contains(usage_error([&] { (void)ops::where(make_tensor({1.0}, DType::u8), a, b); }),
                  {"where", "cond has shape [1]"});
  expect_contains(usage_error([&] {
                    (void)ops::where(make_tensor({1.0, 0.0}, DType::u8), a,
                                     make_tensor({3.0, 4.0}, DType::f64));
                  }),
                  {"where", "b is f64"});
  expect_contains(usage_error([&] { (void)ops::where(Tensor(), a, b); }), {"cond", "undefined"});
}

}  // namespace
}  // namespace tenax
