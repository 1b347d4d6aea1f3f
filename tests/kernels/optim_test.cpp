// The fused optimizer kernels (ops_optim.hpp) on the CPU backend, the reference: five steps of
// every case of optim_reference.hpp against the values torch.optim produced, each option's
// semantics on its own (momentum, dampening, nesterov, weight decay, Adam vs AdamW, grad_scale,
// the first step), and the UsageErrors of invalid arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

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

constexpr DType kDtypes[] = {DType::f64, DType::f32};

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

// ---- semantics of each option, on longer random tensors ----

TEST(SgdUpdate, PlainStepIsParamMinusLrTimesGrad) {
  for (const DType dtype : kDtypes) {
    const Tensor p = philox_uniform({1000}, dtype, 1);
    const Tensor g = philox_uniform({1000}, dtype, 2);
    const std::vector<double> p0 = values_of(p);
    const std::vector<double> g0 = values_of(g);
    ops::SgdStep s;
    s.lr = 0.25;
    ops::sgd_update(p, g, Tensor(), s);
    const std::vector<double> p1 = values_of(p);
    for (std::size_t i = 0; i < p1.size(); ++i) {
      EXPECT_EQ(p1[i], testing::round_to(dtype, p0[i] - testing::round_to(dtype, 0.25 * g0[i])));
    }
    EXPECT_EQ(values_of(g), g0) << "grad is only read";
  }
}

TEST(SgdUpdate, MomentumBufferFollowsTheRecurrence) {
  for (const DType dtype : kDtypes) {
    const Tensor p = philox_uniform({257}, dtype, 3);
    const Tensor buf = Tensor::empty({257}, dtype);
    ops::fill(buf, std::numeric_limits<double>::quiet_NaN());  // not read on the first step
    ops::SgdStep s;
    s.lr = 0.1;
    s.momentum = 0.75;
    s.dampening = 0.5;
    s.first_step = true;
    const Tensor g1 = philox_uniform({257}, dtype, 4);
    ops::sgd_update(p, g1, buf, s);
    EXPECT_EQ(values_of(buf), values_of(g1)) << "the first step copies the gradient";
    const Tensor g2 = philox_uniform({257}, dtype, 5);
    const std::vector<double> p1 = values_of(p);
    s.first_step = false;
    ops::sgd_update(p, g2, buf, s);
    const std::vector<double> b = values_of(buf);
    const std::vector<double> a = values_of(g1);
    const std::vector<double> g = values_of(g2);
    const std::vector<double> p2 = values_of(p);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const double want = testing::round_to(
          dtype, testing::round_to(dtype, 0.75 * a[i]) + testing::round_to(dtype, 0.5 * g[i]));
      EXPECT_EQ(b[i], want) << to_string(dtype) << " " << i;
      const double lr = testing::round_to(dtype, 0.1);
      EXPECT_EQ(p2[i], testing::round_to(dtype, p1[i] - testing::round_to(dtype, lr * b[i])));
    }
  }
}

TEST(SgdUpdate, NesterovLooksAhead) {
  const Tensor p = make_tensor({1.0}, DType::f64);
  const Tensor buf = make_tensor({2.0}, DType::f64);
  const Tensor g = make_tensor({0.5}, DType::f64);
  ops::SgdStep s;
  s.lr = 0.5;
  s.momentum = 0.5;
  s.nesterov = true;
  ops::sgd_update(p, g, buf, s);
  // buf = 0.5 * 2 + 0.5 = 1.5; direction = 0.5 + 0.5 * 1.5 = 1.25; p = 1 - 0.625
  EXPECT_EQ(values_of(buf)[0], 1.5);
  EXPECT_EQ(values_of(p)[0], 0.375);
}

TEST(SgdUpdate, WeightDecayAddsToTheGradientNotTheBuffer) {
  const Tensor p = make_tensor({2.0}, DType::f64);
  const Tensor g = make_tensor({0.5}, DType::f64);
  const Tensor buf = make_tensor({0.0}, DType::f64);
  ops::SgdStep s;
  s.lr = 0.5;
  s.momentum = 0.5;
  s.weight_decay = 0.25;
  s.first_step = true;
  ops::sgd_update(p, g, buf, s);
  EXPECT_EQ(values_of(buf)[0], 1.0);  // 0.5 + 0.25 * 2
  EXPECT_EQ(values_of(p)[0], 1.5);    // 2 - 0.5 * 1
  EXPECT_EQ(values_of(g)[0], 0.5);
}

TEST(SgdUpdate, MomentumZeroIgnoresTheBuffer) {
  const Tensor p = make_tensor({1.0, 2.0}, DType::f32);
  const Tensor g = make_tensor({1.0, 1.0}, DType::f32);
  const Tensor buf = make_tensor({7.0, 7.0}, DType::f32);
  ops::SgdStep s;
  s.lr = 0.5;
  ops::sgd_update(p, g, buf, s);
  EXPECT_EQ(values_of(p), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(values_of(buf), (std::vector<double>{7.0, 7.0}));
}

// grad_scale s is one multiplication of the gradient: the same bits as scaling it beforehand.
TEST(SgdUpdate, GradScaleEqualsAPreScaledGradient) {
  for (const DType dtype : kDtypes) {
    const Tensor g = philox_uniform({999}, dtype, 6);
    const Tensor scaled = g.clone();
    ops::scale(0.37, scaled);
    const Tensor p1 = philox_uniform({999}, dtype, 7);
    const Tensor p2 = p1.clone();
    const Tensor b1 = philox_uniform({999}, dtype, 8);
    const Tensor b2 = b1.clone();
    ops::SgdStep s;
    s.lr = 0.3;
    s.momentum = 0.9;
    s.weight_decay = 0.01;
    s.nesterov = true;
    ops::sgd_update(p2, scaled, b2, s);
    s.grad_scale = 0.37;
    ops::sgd_update(p1, g, b1, s);
    EXPECT_TRUE(same_bytes(p1, p2)) << to_string(dtype);
    EXPECT_TRUE(same_bytes(b1, b2)) << to_string(dtype);
  }
}

TEST(AdamUpdate, FirstStepMovesEachElementByAboutLr) {
  // With zero moments the first step is lr * g / (|g| + eps'): a sign step of size lr.
  for (const DType dtype : kDtypes) {
    const Tensor p = Tensor::empty({100}, dtype);
    ops::fill(p, 0.0);
    const Tensor g = philox_uniform({100}, dtype, 9);
    const Tensor m = Tensor::empty_like(p);
    const Tensor v = Tensor::empty_like(p);
    ops::fill(m, 0.0);
    ops::fill(v, 0.0);
    ops::AdamStep s;
    s.lr = 0.01;
    s.step = 1;
    ops::adam_update(p, g, m, v, s);
    const std::vector<double> gv = values_of(g);
    const std::vector<double> pv = values_of(p);
    for (std::size_t i = 0; i < pv.size(); ++i) {
      EXPECT_NEAR(pv[i], -0.01 * (gv[i] > 0 ? 1 : -1), 1e-5) << to_string(dtype) << " " << i;
    }
  }
}

TEST(AdamUpdate, AdamWDecaysTheParameterAdamTheGradient) {
  for (const DType dtype : kDtypes) {
    const Tensor g = philox_uniform({300}, dtype, 10);
    const Tensor p0 = philox_uniform({300}, dtype, 11);
    auto run = [&](bool decoupled, double weight_decay) {
      const Tensor p = p0.clone();
      const Tensor m = Tensor::empty_like(p);
      const Tensor v = Tensor::empty_like(p);
      ops::fill(m, 0.0);
      ops::fill(v, 0.0);
      ops::AdamStep s;
      s.lr = 0.1;
      s.weight_decay = weight_decay;
      s.decoupled_weight_decay = decoupled;
      for (std::int64_t step = 1; step <= 3; ++step) {
        s.step = step;
        ops::adam_update(p, g, m, v, s);
      }
      return p;
    };
    EXPECT_TRUE(same_bytes(run(false, 0.0), run(true, 0.0))) << "no decay: one algorithm";
    EXPECT_FALSE(same_bytes(run(false, 0.5), run(true, 0.5))) << "decay: two algorithms";
    EXPECT_FALSE(same_bytes(run(false, 0.5), run(false, 0.0)));
    // AdamW's decay is p * (1 - lr wd) before the Adam step: with g = 0 and zero moments the
    // Adam step is 0, leaving exactly the decayed parameter.
    const Tensor p = p0.clone();
    const Tensor zero = Tensor::empty_like(p);
    const Tensor m = Tensor::empty_like(p);
    const Tensor v = Tensor::empty_like(p);
    ops::fill(zero, 0.0);
    ops::fill(m, 0.0);
    ops::fill(v, 0.0);
    ops::AdamStep s;
    s.lr = 0.1;
    s.weight_decay = 0.5;
    s.decoupled_weight_decay = true;
    s.step = 1;
    ops::adam_update(p, zero, m, v, s);
    const std::vector<double> before = values_of(p0);
    const std::vector<double> after = values_of(p);
    for (std::size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i],
                testing::round_to(dtype, before[i] * testing::round_to(dtype, 1.0 - 0.1 * 0.5)));
    }
  }
}

TEST(AdamUpdate, GradScaleEqualsAPreScaledGradient) {
  for (const DType dtype : kDtypes) {
    const Tensor g = philox_uniform({513}, dtype, 12);
    const Tensor scaled = g.clone();
    ops::scale(0.37, scaled);
    auto state = [&] {
      std::vector<Tensor> t{philox_uniform({513}, dtype, 13), philox_uniform({513}, dtype, 14),
                            philox_uniform({513}, dtype, 15)};
      ops::unary_into(ops::UnaryOp::abs, t[2], t[2]);  // exp_avg_sq >= 0
      return t;
    };
    const std::vector<Tensor> a = state();
    const std::vector<Tensor> b = state();
    ops::AdamStep s;
    s.lr = 0.01;
    s.weight_decay = 0.1;
    s.step = 4;
    ops::adam_update(b[0], scaled, b[1], b[2], s);
    s.grad_scale = 0.37;
    ops::adam_update(a[0], g, a[1], a[2], s);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bytes(a[i], b[i])) << to_string(dtype) << i;
  }
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

TEST(OptimUpdate, EmptyTensorsAreANoOp) {
  const Tensor e = Tensor::empty({0}, DType::f32);
  ops::SgdStep s;
  s.lr = 0.1;
  s.momentum = 0.9;
  EXPECT_NO_THROW(
      ops::sgd_update(e, Tensor::empty({0}, DType::f32), Tensor::empty({0}, DType::f32), s));
  ops::AdamStep a;
  a.lr = 0.1;
  a.step = 1;
  EXPECT_NO_THROW(ops::adam_update(e, Tensor::empty({0}, DType::f32),
                                   Tensor::empty({0}, DType::f32), Tensor::empty({0}, DType::f32),
                                   a));
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
