// The ops reject bad operands with errors that name the op, the operands and the fix.
#include <gtest/gtest.h>

#include <string>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::usage_error;

TEST(OpsChecks, DeviceMismatchNamesBothOperandsAndTo) {
  const Tensor x = Tensor::empty({4}, DType::f32);
  const Tensor y = testing::fake_cuda_tensor({4}, DType::f32);
  expect_contains(usage_error([&] { ops::axpby(1.0, y, 1.0, x); }),
                  {"axpby", "x is on cuda:0", "y is on cpu", "to(device)"});
  expect_contains(usage_error([&] { (void)ops::dot(x, y); }),
                  {"dot", "x is on cpu", "y is on cuda:0", "to(device)"});
  expect_contains(usage_error([&] { (void)ops::add(x, y); }), {"add", "a", "b", "to(device)"});
  expect_contains(usage_error([&] { ops::unary_into(ops::UnaryOp::exp, x, y); }),
                  {"exp", "x is on cpu", "out is on cuda:0", "to(device)"});
}

TEST(OpsChecks, DtypeMismatchNamesBothOperandsAndCast) {
  const Tensor x = Tensor::empty({4}, DType::f32);
  const Tensor y = Tensor::empty({4}, DType::f16);
  expect_contains(usage_error([&] { ops::axpby(1.0, x, 1.0, y); }),
                  {"axpby", "x is f32", "y is f16", "ops::cast"});
  expect_contains(usage_error([&] { (void)ops::maximum(x, y); }),
                  {"maximum", "a is f32", "b is f16", "ops::cast"});
  expect_contains(usage_error([&] { ops::copy(y, x); }), {"copy", "dst", "src", "cast_into"});
}

TEST(OpsChecks, ShapeMismatchNamesBothShapes) {
  const Tensor x = Tensor::empty({4}, DType::f64);
  const Tensor y = Tensor::empty({2, 2}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::dot(x, y); }),
                  {"dot", "x has shape [4]", "y has shape [2, 2]", "reshape"});
  expect_contains(usage_error([&] { ops::cast_into(Tensor::empty({3}, DType::f32), x); }),
                  {"cast_into", "dst has shape [3]", "src has shape [4]"});
  expect_contains(usage_error([&] { ops::binary_into(ops::BinaryOp::mul, x, x, y); }),
                  {"mul", "out has shape [2, 2]"});
}

TEST(OpsChecks, IntegerUndefinedEmptyAndBadScalars) {
  const Tensor ints = Tensor::empty({4}, DType::i32);
  expect_contains(usage_error([&] { ops::scale(2.0, ints); }),
                  {"scale", "x is i32[4] on cpu", "floating-point", "ops::cast"});
  expect_contains(usage_error([&] { (void)ops::sum(Tensor()); }), {"sum", "x", "undefined"});
  expect_contains(usage_error([&] { (void)ops::max(Tensor::empty({0}, DType::f32)); }),
                  {"max", "no elements"});
  const Tensor t = Tensor::empty({4}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::unscale_and_check(t, -1.0); }),
                  {"unscale_and_check", "scale is -1", "positive"});
  expect_contains(usage_error([&] { ops::random_normal(t, 0, 0, 0.0, -2.0); }),
                  {"random_normal", "stddev"});
  expect_contains(usage_error([&] { (void)ops::cast(t, DType::u8); }), {"cast", "u8"});
}

}  // namespace
}  // namespace tenax
