// compare and where (ops_select.hpp) on the CPU backend: the bodies shared with every backend
// (select_cases.hpp), in-place where, empty tensors and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/select_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/kernels/ops_select.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::make_tensor;
using testing::usage_error;
using testing::values_of;

using select_cases::SelectKernels;
// The bodies shared with the CUDA backend (select_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, SelectKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

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
