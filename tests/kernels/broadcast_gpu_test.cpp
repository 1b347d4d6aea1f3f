// The CUDA backend of broadcast_binary and sum_to against the CPU backend, the reference: both
// compute every output element with the same expression in the same order (broadcast_bodies.hpp),
// so the results must match bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/broadcast_cases.hpp"
#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_broadcast.hpp"

namespace tenax {
namespace {

// Every broadcast and sum_to test body the CPU backend runs (broadcast_cases.hpp), on CUDA.
using broadcast_cases::BroadcastKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, BroadcastKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

using testing::expect_identical;
using testing::set_value;
using testing::uniform_tensor;

using BroadcastGpu = testing::GpuTest;

constexpr ops::BinaryOp kBinaryOps[] = {ops::BinaryOp::add,     ops::BinaryOp::sub,
                                        ops::BinaryOp::mul,     ops::BinaryOp::div,
                                        ops::BinaryOp::maximum, ops::BinaryOp::minimum};

TEST_F(BroadcastGpu, BroadcastBinaryMatchesBitForBit) {
  struct Case {
    Shape a;
    Shape b;
  };
  const std::vector<Case> cases = {
      {{1024, 999}, {999}},           {{1024, 999}, {1024, 1}}, {{1}, {1024, 999}},
      {{999}, {1024, 999}},           {{64, 1, 130}, {70, 1}},  {{8, 70, 130}, {8, 1, 130}},
      {{2, 1, 3, 1, 5}, {4, 1, 6, 1}}};
  unsigned seed = 1;
  for (const Case& c : cases) {
    for (DType dtype : kFloatDTypes) {
      Tensor a = uniform_tensor(c.a, dtype, seed++, -4.0, 4.0);
      const Tensor b = uniform_tensor(c.b, dtype, seed++, -4.0, 4.0);
      set_value(a, 0, NAN);
      const Tensor ga = a.to(gpu());
      const Tensor gb = b.to(gpu());
      for (ops::BinaryOp op : kBinaryOps) {
        expect_identical(ops::broadcast_binary(op, a, b), ops::broadcast_binary(op, ga, gb),
                         std::string(ops::to_string(op)) + " " + std::string(to_string(dtype)) +
                             " " + to_string(c.a) + " with " + to_string(c.b));
      }
    }
  }
}

TEST_F(BroadcastGpu, SumToMatchesBitForBit) {
  struct Case {
    Shape x;
    Shape target;
  };
  const std::vector<Case> cases = {{{4096, 1000}, {1000}},          {{4096, 1000}, {1, 1000}},
                                   {{1000, 4096}, {1000, 1}},       {{64, 70, 130}, {70, 1}},
                                   {{64, 70, 130}, {64, 1, 130}},   {{64, 70, 130}, Shape{}},
                                   {{2, 3, 4, 5, 6}, {3, 1, 5, 1}}, {{33, 17}, {33, 17}}};
  unsigned seed = 100;
  for (const Case& c : cases) {
    for (DType dtype : kFloatDTypes) {
      const Tensor x = uniform_tensor(c.x, dtype, seed++, -4.0, 4.0);
      expect_identical(ops::sum_to(x, c.target), ops::sum_to(x.to(gpu()), c.target),
                       std::string("sum_to ") + std::string(to_string(dtype)) + " " +
                           to_string(c.x) + " -> " + to_string(c.target));
    }
  }
  // Inputs that need the round-once store of f16/bf16 (see broadcast_test.cpp).
  const Tensor h =
      testing::make_tensor({3}, DType::f16, {1.0, std::ldexp(1.0, -11), std::ldexp(1.0, -24)});
  expect_identical(ops::sum_to(h, {1}), ops::sum_to(h.to(gpu()), {1}), "sum_to round once");
}

}  // namespace
}  // namespace tenax
