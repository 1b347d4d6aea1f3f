// Strided views read and written (ops_view.hpp) on the CPU backend: the bodies shared with every
// backend (view_cases.hpp), and the errors.
#include <gtest/gtest.h>

#include <string>

#include "kernels/axis_reference.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "kernels/view_cases.hpp"
#include "tenax/core/strided_view.hpp"
#include "tenax/kernels/ops_view.hpp"

namespace tenax {
namespace {

using testing::counting_tensor;
using testing::expect_contains;
using testing::usage_error;
using view_cases::ViewKernels;

INSTANTIATE_TEST_SUITE_P(Cpu, ViewKernels, ::testing::Values(Device::cpu()), testing::backend_name);

TEST(ViewOps, RefusesMismatchedViewsNamingBoth) {
  const Tensor a = counting_tensor({3, 4}, DType::f64);
  const Tensor b = counting_tensor({4, 3}, DType::f64);
  expect_contains(usage_error([&] { ops::assign(StridedView(a), StridedView(b)); }),
                  {"assign", "differ in shape", "f64[3, 4]", "f64[4, 3]", "fix:"});
  // The transposed view has a's shape: accepted.
  ops::assign(StridedView(a), StridedView(b).transpose(0, 1));
  EXPECT_EQ(testing::values_of(a),
            testing::values_of(ops::contiguous(StridedView(b).transpose(0, 1))));
  const Tensor f = counting_tensor({3, 4}, DType::f32);
  expect_contains(usage_error([&] { ops::assign(StridedView(a), StridedView(f)); }),
                  {"assign", "dtype", "ops::cast"});
  const Tensor gpu = testing::fake_cuda_tensor({3, 4}, DType::f64);
  expect_contains(usage_error([&] { ops::assign(StridedView(a), StridedView(gpu)); }),
                  {"assign", "devices", "cuda:0"});
  expect_contains(usage_error([&] { ops::assign(StridedView(), StridedView(a)); }),
                  {"assign", "dst", "undefined"});
  expect_contains(usage_error([&] { ops::assign(StridedView(a), Tensor()); }),
                  {"assign", "src", "undefined"});
  expect_contains(usage_error([&] { static_cast<void>(ops::contiguous(StridedView())); }),
                  {"contiguous", "undefined"});
  expect_contains(usage_error([&] { ops::fill(StridedView(), 1.0); }), {"fill", "undefined"});
}

}  // namespace
}  // namespace tenax
