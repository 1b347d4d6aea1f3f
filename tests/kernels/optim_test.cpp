// The fused optimizer kernels (ops_optim.hpp) on the CPU backend, the reference: five steps of
// every case of optim_reference.hpp against the values torch.optim produced, the bodies shared
// with every backend (optim_cases.hpp: each option's semantics on its own), the same bits for any
// thread count, and the UsageErrors of invalid arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/optim_cases.hpp"
#include "kernels/optim_test_helpers.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/detail/optim_kernels.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::make_tensor;
using testing::philox_uniform;
using testing::same_bytes;
using testing::usage_error;
using testing::values_of;
namespace ref = testing::optim_reference;

using optim_cases::kDtypes;
using optim_cases::OptimKernels;
// The bodies shared with the CUDA backend (optim_cases.hpp), on the CPU.
INSTANTIATE_TEST_SUITE_P(Cpu, OptimKernels, ::testing::Values(Device::cpu()),
                         testing::backend_name);

TEST(OptimReference, EveryCaseMatchesPyTorch) {
  for (const ref::Case& c : ref::kCases) {
    for (const DType dtype : kDtypes) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(to_string(dtype)));
      testing::expect_run_matches_reference(testing::run_with_ops(c, dtype, Device::cpu()), c,
                                            dtype);
    }
  }
}

TEST(OptimReference, CasesCoverEveryOption) {
  bool momentum = false, dampening = false, nesterov = false, sgd_decay = false, adam = false,
       adamw = false, adam_decay = false, scale_sgd = false, scale_adam = false,
       large_lerp_weight = false;
  for (const ref::Case& c : ref::kCases) {
    const std::string kind = c.optimizer;
    momentum |= kind == "sgd" && c.momentum != 0.0;
    dampening |= kind == "sgd" && c.dampening != 0.0;
    nesterov |= c.nesterov;
    sgd_decay |= kind == "sgd" && c.weight_decay != 0.0;
    adam |= kind == "adam";
    adamw |= kind == "adamw";
    adam_decay |= kind == "adam" && c.weight_decay != 0.0;
    scale_sgd |= kind == "sgd" && c.grad_scale != 1.0;
    scale_adam |= kind != "sgd" && c.grad_scale != 1.0;
    large_lerp_weight |= kind != "sgd" && 1.0 - c.beta1 >= 0.5;
  }
  EXPECT_TRUE(momentum && dampening && nesterov && sgd_decay && adam && adamw && adam_decay &&
              scale_sgd && scale_adam && large_lerp_weight);
}

TEST(OptimUpdate, ResultsDoNotDependOnTheThreadCount) {
  const std::int64_t n = (1 << 17) + 3;  // several parallel_for chunks
  for (const DType dtype : kDtypes) {
    std::vector<Tensor> runs;
    for (const int threads : {1, 3}) {
      CpuContext context(threads);
      const Tensor p = philox_uniform({n}, dtype, 16);
      const Tensor m = philox_uniform({n}, dtype, 17);
      const Tensor v = philox_uniform({n}, dtype, 18);
      ops::unary_into(ops::UnaryOp::abs, v, v);
      ops::AdamStep s;
      s.lr = 0.01;
      s.step = 2;
      kernels::cpu::adam_update(context,
                                kernels::AdamArgs{p, philox_uniform({n}, dtype, 19), m, v, s});
      runs.push_back(p);
    }
    EXPECT_TRUE(same_bytes(runs[0], runs[1])) << to_string(dtype);
  }
}

// ---- validation ----

ops::SgdStep sgd(double lr) {
  ops::SgdStep s;
  s.lr = lr;
  return s;
}

ops::AdamStep adam(double lr, std::int64_t step) {
  ops::AdamStep s;
  s.lr = lr;
  s.step = step;
  return s;
}

TEST(OptimValidation, OperandsAreCheckedAndNamed) {
  const Tensor p = make_tensor({1.0, 2.0}, DType::f32);
  const Tensor g = make_tensor({1.0, 2.0}, DType::f32);
  expect_contains(usage_error([&] { ops::sgd_update(Tensor(), g, Tensor(), sgd(0.1)); }),
                  {"sgd_update", "param", "undefined"});
  expect_contains(usage_error([&] {
                    ops::sgd_update(p, make_tensor({1.0, 2.0}, DType::f64), {}, sgd(0.1));
                  }),
                  {"sgd_update", "param", "grad", "f64", "f32"});
  expect_contains(usage_error([&] {
                    ops::sgd_update(p, make_tensor({1.0, 2.0, 3.0}, DType::f32), {}, sgd(1));
                  }),
                  {"sgd_update", "shape", "[3]", "[2]"});
  expect_contains(usage_error([&] {
                    ops::sgd_update(make_tensor({1.0}, DType::f16), make_tensor({1.0}, DType::f16),
                                    {}, sgd(0.1));
                  }),
                  {"sgd_update", "f16", "f32 and f64"});
  expect_contains(usage_error([&] {
                    ops::sgd_update(p, testing::fake_cuda_tensor({2}, DType::f32), {}, sgd(1));
                  }),
                  {"sgd_update", "cuda:0", "cpu"});
  expect_contains(usage_error([&] { ops::sgd_update(p, p, {}, sgd(0.1)); }),
                  {"sgd_update", "param overlaps grad"});
  ops::SgdStep with_momentum = sgd(0.1);
  with_momentum.momentum = 0.9;
  expect_contains(usage_error([&] { ops::sgd_update(p, g, Tensor(), with_momentum); }),
                  {"sgd_update", "momentum = 0.9", "momentum_buffer", "undefined"});
  expect_contains(usage_error([&] { ops::sgd_update(p, g, g, with_momentum); }),
                  {"momentum_buffer overlaps grad"});
  expect_contains(
      usage_error([&] { ops::sgd_update(p, g, make_tensor({0.0}, DType::f32), with_momentum); }),
      {"momentum_buffer", "shape"});

  const Tensor m = make_tensor({0.0, 0.0}, DType::f32);
  const Tensor v = make_tensor({0.0, 0.0}, DType::f32);
  expect_contains(usage_error([&] { ops::adam_update(p, g, m, m, adam(0.1, 1)); }),
                  {"adam_update", "exp_avg overlaps exp_avg_sq"});
  expect_contains(usage_error([&] { ops::adam_update(p, g, Tensor(), v, adam(0.1, 1)); }),
                  {"adam_update", "exp_avg", "undefined"});
  expect_contains(usage_error([&] {
                    ops::adam_update(p, g, m, make_tensor({0.0, 0.0}, DType::f64), adam(0.1, 1));
                  }),
                  {"adam_update", "exp_avg_sq", "f64"});
  expect_contains(usage_error([&] { ops::adam_update(p, g, m, p, adam(0.1, 1)); }),
                  {"param overlaps exp_avg_sq"});
}

TEST(OptimValidation, ScalarsAreCheckedAndNothingIsWritten) {
  const Tensor p = make_tensor({1.0, 2.0}, DType::f64);
  const Tensor g = make_tensor({1.0, 2.0}, DType::f64);
  const Tensor b = make_tensor({0.0, 0.0}, DType::f64);
  const Tensor b2 = make_tensor({0.0, 0.0}, DType::f64);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto sgd_error = [&](auto change) {
    ops::SgdStep s = sgd(0.1);
    s.momentum = 0.9;
    change(s);
    return usage_error([&] { ops::sgd_update(p, g, b, s); });
  };
  expect_contains(sgd_error([](ops::SgdStep& s) { s.lr = -0.1; }),
                  {"sgd_update", "lr = -0.1", "finite and >= 0"});
  expect_contains(sgd_error([](ops::SgdStep& s) { s.momentum = -1; }), {"momentum = -1"});
  expect_contains(sgd_error([&](ops::SgdStep& s) { s.dampening = nan; }), {"dampening = nan"});
  expect_contains(sgd_error([](ops::SgdStep& s) { s.weight_decay = -1e-4; }),
                  {"weight_decay = -0.0001"});
  expect_contains(sgd_error([](ops::SgdStep& s) { s.grad_scale = INFINITY; }),
                  {"grad_scale = inf"});
  expect_contains(sgd_error([](ops::SgdStep& s) {
                    s.nesterov = true;
                    s.dampening = 0.1;
                  }),
                  {"nesterov", "dampening = 0.1", "dampening == 0"});
  expect_contains(usage_error([&] {
                    ops::SgdStep s = sgd(0.1);
                    s.nesterov = true;
                    ops::sgd_update(p, g, Tensor(), s);
                  }),
                  {"nesterov", "momentum = 0", "momentum > 0"});

  auto adam_error = [&](auto change) {
    ops::AdamStep s = adam(0.1, 1);
    change(s);
    return usage_error([&] { ops::adam_update(p, g, b, b2, s); });
  };
  expect_contains(adam_error([](ops::AdamStep& s) { s.step = 0; }),
                  {"adam_update", "step = 0", ">= 1"});
  expect_contains(adam_error([](ops::AdamStep& s) { s.beta1 = 1.0; }), {"beta1 = 1", "[0, 1)"});
  expect_contains(adam_error([](ops::AdamStep& s) { s.beta2 = -0.1; }), {"beta2 = -0.1"});
  expect_contains(adam_error([](ops::AdamStep& s) { s.eps = -1e-8; }), {"eps = -1e-08"});
  expect_contains(adam_error([&](ops::AdamStep& s) { s.lr = nan; }), {"lr = nan"});
  expect_contains(adam_error([](ops::AdamStep& s) { s.weight_decay = -1; }), {"weight_decay = -1"});
  EXPECT_EQ(values_of(p), (std::vector<double>{1.0, 2.0})) << "nothing written";
  EXPECT_EQ(values_of(b), (std::vector<double>{0.0, 0.0}));
}

TEST(OptimDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  auto t = [] { return testing::fake_cuda_tensor({4}, DType::f32); };
  try {
    ops::sgd_update(t(), t(), Tensor(), sgd(0.1));
    ADD_FAILURE() << "expected NotCompiledError";
  } catch (const NotCompiledError& e) {
    expect_contains(e.what(), {"sgd_update", "TENAX_WITH_CUDA"});
  }
  EXPECT_THROW(ops::adam_update(t(), t(), t(), t(), adam(0.1, 1)), NotCompiledError);
}

}  // namespace
}  // namespace tenax
