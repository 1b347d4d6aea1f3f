// The fused optimizer kernels' semantics written once for every backend (backend_test.hpp), on
// longer random tensors: each option on its own (momentum and its buffer, dampening, nesterov,
// weight decay on the gradient or the parameter, Adam against AdamW, grad_scale equal to a
// pre-scaled gradient, the first step), and empty tensors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/optim_test_helpers.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax::optim_cases {

using testing::make_tensor;
using testing::philox_uniform;
using testing::values_of;

inline constexpr DType kDtypes[] = {DType::f64, DType::f32};

class OptimKernels : public testing::BackendTest {};

TEST_P(OptimKernels, SgdUpdatePlainStepIsParamMinusLrTimesGrad) {
  for (const DType dtype : kDtypes) {
    const Tensor p = put(philox_uniform({1000}, dtype, 1));
    const Tensor g = put(philox_uniform({1000}, dtype, 2));
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

TEST_P(OptimKernels, SgdUpdateMomentumBufferFollowsTheRecurrence) {
  for (const DType dtype : kDtypes) {
    const Tensor p = put(philox_uniform({257}, dtype, 3));
    const Tensor buf = Tensor::empty({257}, dtype, device());
    ops::fill(buf, std::numeric_limits<double>::quiet_NaN());  // not read on the first step
    ops::SgdStep s;
    s.lr = 0.1;
    s.momentum = 0.75;
    s.dampening = 0.5;
    s.first_step = true;
    const Tensor g1 = put(philox_uniform({257}, dtype, 4));
    ops::sgd_update(p, g1, buf, s);
    EXPECT_EQ(values_of(buf), values_of(g1)) << "the first step copies the gradient";
    const Tensor g2 = put(philox_uniform({257}, dtype, 5));
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

TEST_P(OptimKernels, SgdUpdateNesterovLooksAhead) {
  const Tensor p = put(make_tensor({1.0}, DType::f64));
  const Tensor buf = put(make_tensor({2.0}, DType::f64));
  const Tensor g = put(make_tensor({0.5}, DType::f64));
  ops::SgdStep s;
  s.lr = 0.5;
  s.momentum = 0.5;
  s.nesterov = true;
  ops::sgd_update(p, g, buf, s);
  // buf = 0.5 * 2 + 0.5 = 1.5; direction = 0.5 + 0.5 * 1.5 = 1.25; p = 1 - 0.625
  EXPECT_EQ(values_of(buf)[0], 1.5);
  EXPECT_EQ(values_of(p)[0], 0.375);
}

TEST_P(OptimKernels, SgdUpdateWeightDecayAddsToTheGradientNotTheBuffer) {
  const Tensor p = put(make_tensor({2.0}, DType::f64));
  const Tensor g = put(make_tensor({0.5}, DType::f64));
  const Tensor buf = put(make_tensor({0.0}, DType::f64));
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

TEST_P(OptimKernels, SgdUpdateMomentumZeroIgnoresTheBuffer) {
  const Tensor p = put(make_tensor({1.0, 2.0}, DType::f32));
  const Tensor g = put(make_tensor({1.0, 1.0}, DType::f32));
  const Tensor buf = put(make_tensor({7.0, 7.0}, DType::f32));
  ops::SgdStep s;
  s.lr = 0.5;
  ops::sgd_update(p, g, buf, s);
  EXPECT_EQ(values_of(p), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(values_of(buf), (std::vector<double>{7.0, 7.0}));
}

// grad_scale s is one multiplication of the gradient: the same bits as scaling it beforehand.
TEST_P(OptimKernels, SgdUpdateGradScaleEqualsAPreScaledGradient) {
  for (const DType dtype : kDtypes) {
    const Tensor g = put(philox_uniform({999}, dtype, 6));
    const Tensor scaled = g.clone();
    ops::scale(0.37, scaled);
    const Tensor p1 = put(philox_uniform({999}, dtype, 7));
    const Tensor p2 = p1.clone();
    const Tensor b1 = put(philox_uniform({999}, dtype, 8));
    const Tensor b2 = b1.clone();
    ops::SgdStep s;
    s.lr = 0.3;
    s.momentum = 0.9;
    s.weight_decay = 0.01;
    s.nesterov = true;
    ops::sgd_update(p2, scaled, b2, s);
    s.grad_scale = 0.37;
    ops::sgd_update(p1, g, b1, s);
    EXPECT_TRUE(same(p1, p2)) << to_string(dtype);
    EXPECT_TRUE(same(b1, b2)) << to_string(dtype);
  }
}

TEST_P(OptimKernels, AdamUpdateFirstStepMovesEachElementByAboutLr) {
  // With zero moments the first step is lr * g / (|g| + eps'): a sign step of size lr.
  for (const DType dtype : kDtypes) {
    const Tensor p = Tensor::empty({100}, dtype, device());
    ops::fill(p, 0.0);
    const Tensor g = put(philox_uniform({100}, dtype, 9));
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

TEST_P(OptimKernels, AdamUpdateAdamWDecaysTheParameterAdamTheGradient) {
  for (const DType dtype : kDtypes) {
    const Tensor g = put(philox_uniform({300}, dtype, 10));
    const Tensor p0 = put(philox_uniform({300}, dtype, 11));
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
    EXPECT_TRUE(same(run(false, 0.0), run(true, 0.0))) << "no decay: one algorithm";
    EXPECT_FALSE(same(run(false, 0.5), run(true, 0.5))) << "decay: two algorithms";
    EXPECT_FALSE(same(run(false, 0.5), run(false, 0.0)));
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

TEST_P(OptimKernels, AdamUpdateGradScaleEqualsAPreScaledGradient) {
  for (const DType dtype : kDtypes) {
    const Tensor g = put(philox_uniform({513}, dtype, 12));
    const Tensor scaled = g.clone();
    ops::scale(0.37, scaled);
    auto state = [&] {
      std::vector<Tensor> t{put(philox_uniform({513}, dtype, 13)),
                            put(philox_uniform({513}, dtype, 14)),
                            put(philox_uniform({513}, dtype, 15))};
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
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(same(a[i], b[i])) << to_string(dtype) << i;
  }
}

TEST_P(OptimKernels, OptimUpdateEmptyTensorsAreANoOp) {
  const Tensor e = Tensor::empty({0}, DType::f32, device());
  ops::SgdStep s;
  s.lr = 0.1;
  s.momentum = 0.9;
  EXPECT_NO_THROW(ops::sgd_update(e, Tensor::empty({0}, DType::f32, device()),
                                  Tensor::empty({0}, DType::f32, device()), s));
  ops::AdamStep a;
  a.lr = 0.1;
  a.step = 1;
  EXPECT_NO_THROW(ops::adam_update(e, Tensor::empty({0}, DType::f32, device()),
                                   Tensor::empty({0}, DType::f32, device()),
                                   Tensor::empty({0}, DType::f32, device()), a));
}

}  // namespace tenax::optim_cases
