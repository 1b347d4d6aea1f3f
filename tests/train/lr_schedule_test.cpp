// nn::LrSchedule: values at the key steps of each kind, PyTorch's SequentialLR(LinearLR, main)
// values, purity in the step, the spec parser and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>

#include "kernels/usage_error.hpp"
#include "tenax/train/nn/lr_schedule.hpp"

namespace tenax::train::nn {
namespace {

using testing::expect_contains;
using testing::usage_error;

void expect_relative(double got, double want, double tolerance = 1e-12) {
  EXPECT_NEAR(got, want, tolerance * std::fabs(want)) << "want " << want;
}

TEST(LrSchedule, ConstantWithAndWithoutWarmup) {
  const LrSchedule plain = LrSchedule::constant(0.1);
  EXPECT_EQ(plain.lr_at(0), 0.1);
  EXPECT_EQ(plain.lr_at(1'000'000'000), 0.1);
  const LrSchedule warm = LrSchedule::constant(0.1, Warmup{4, 0.25});
  EXPECT_EQ(warm.lr_at(0), 0.1 * 0.25);
  expect_relative(warm.lr_at(2), 0.1 * (0.25 + 0.75 * 0.5));
  EXPECT_EQ(warm.lr_at(4), 0.1);
  EXPECT_EQ(warm.lr_at(5), 0.1);
  EXPECT_EQ(LrSchedule::constant(0.3, Warmup{3}).lr_at(0), 0.3 / 3.0) << "LinearLR's 1/3";
}

TEST(LrSchedule, CosineKeySteps) {
  const LrSchedule s = LrSchedule::cosine(1.0, 110, 0.1, Warmup{10, 0.5});
  EXPECT_EQ(s.lr_at(0), 0.5);
  expect_relative(s.lr_at(5), 0.75);
  EXPECT_EQ(s.lr_at(10), 1.0) << "the peak at the end of the warmup";
  expect_relative(s.lr_at(60), 0.55);  // halfway: the mean of base and min
  expect_relative(s.lr_at(35), 0.1 + 0.9 * (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_GT(s.lr_at(109), 0.1);
  EXPECT_EQ(s.lr_at(110), 0.1) << "min_lr at total_steps";
  EXPECT_EQ(s.lr_at(500), 0.1) << "held at min_lr afterwards";
  // Decreasing over the decay.
  for (std::int64_t t = 10; t < 110; ++t) EXPECT_GT(s.lr_at(t), s.lr_at(t + 1)) << t;
  EXPECT_EQ(LrSchedule::cosine(2.0, 4).lr_at(2), 1.0) << "no warmup, min_lr 0";
}

// torch 1.13: SGD(lr=0.1) with SequentialLR([LinearLR(start_factor=0.1, total_iters=10),
// CosineAnnealingLR(T_max=90, eta_min=1e-5)], milestones=[10]); the lr before each opt.step().
TEST(LrSchedule, CosineMatchesPyTorchsSequentialLr) {
  const LrSchedule s = LrSchedule::cosine(0.1, 100, 1e-5, Warmup{10, 0.1});
  const std::int64_t steps[] = {0, 1, 5, 9, 10, 11, 40, 55, 99, 100};
  const double torch[] = {0.010000000000000002,
                          0.019000000000000003,
                          0.055000000000000014,
                          0.09100000000000004,
                          0.1,
                          0.09996954439681971,
                          0.07500250000000001,
                          0.05000500000000001,
                          4.045560318030737e-05,
                          1e-05};
  for (std::size_t i = 0; i < std::size(steps); ++i) expect_relative(s.lr_at(steps[i]), torch[i]);
}

// torch 1.13: SGD(lr=0.1) with SequentialLR([LinearLR(start_factor=0.5, total_iters=4),
// StepLR(step_size=3, gamma=0.1)], milestones=[4]).
TEST(LrSchedule, StepDecayMatchesPyTorch) {
  const LrSchedule s = LrSchedule::step_decay(0.1, 3, 0.1, Warmup{4, 0.5});
  const double torch[] = {0.05,
                          0.0625,
                          0.075,
                          0.08750000000000001,
                          0.1,
                          0.1,
                          0.1,
                          0.010000000000000002,
                          0.010000000000000002,
                          0.010000000000000002,
                          0.0010000000000000002,
                          0.0010000000000000002,
                          0.0010000000000000002,
                          0.00010000000000000003,
                          0.00010000000000000003};
  for (std::int64_t t = 0; t < 15; ++t) expect_relative(s.lr_at(t), torch[t]);
  EXPECT_EQ(LrSchedule::step_decay(1.0, 2, 0.5).lr_at(5), 0.25) << "no warmup";
}

TEST(LrSchedule, IsAPureFunctionOfTheStep) {
  const LrSchedule s = LrSchedule::cosine(0.1, 1000, 1e-4, Warmup{50});
  const double later = s.lr_at(700);
  for (std::int64_t t = 0; t < 700; t += 37) (void)s.lr_at(t);
  EXPECT_EQ(s.lr_at(700), later);
  const LrSchedule copy = parse_lr_schedule("cosine:warmup=50,min_lr=1e-4", 0.1, 1000);
  for (const std::int64_t t : {0, 25, 50, 51, 500, 999, 1000, 5000}) {
    EXPECT_EQ(copy.lr_at(t), s.lr_at(t)) << t;
  }
}

TEST(LrSchedule, ParsesSpecs) {
  const LrSchedule c = parse_lr_schedule("constant", 0.5, 10);
  EXPECT_EQ(c.kind(), LrSchedule::Kind::constant);
  EXPECT_EQ(c.lr_at(0), 0.5);
  const LrSchedule cw = parse_lr_schedule("constant:warmup=2,start_factor=0.5", 1.0, 10);
  EXPECT_EQ(cw.lr_at(0), 0.5);
  EXPECT_EQ(cw.lr_at(1), 0.75);
  const LrSchedule cos = parse_lr_schedule("cosine:warmup=100,min_lr=1e-5", 1e-3, 10'000);
  EXPECT_EQ(cos.kind(), LrSchedule::Kind::cosine);
  EXPECT_EQ(cos.warmup().steps, 100);
  EXPECT_EQ(cos.lr_at(100), 1e-3);
  EXPECT_EQ(cos.lr_at(10'000), 1e-5);
  const LrSchedule st = parse_lr_schedule("step:every=1000,gamma=0.1,warmup=10", 1.0, 0);
  EXPECT_EQ(st.kind(), LrSchedule::Kind::step);
  EXPECT_EQ(st.lr_at(1009), 1.0);
  expect_relative(st.lr_at(1010), 0.1);
  EXPECT_EQ(parse_lr_schedule("step:every=5", 1.0, 0).lr_at(5), 0.1) << "gamma defaults to 0.1";
  EXPECT_EQ(st.describe(), "step:warmup=10,start_factor=0.333333,every=1000,gamma=0.1");
  EXPECT_EQ(cos.describe(),
            "cosine:warmup=100,start_factor=0.333333,min_lr=1e-05,total_steps=10000");
}

TEST(LrSchedule, ErrorsListKindsAndKeys) {
  expect_contains(usage_error([] { (void)parse_lr_schedule("linear", 0.1, 10); }),
                  {"unknown schedule kind 'linear'", "constant, cosine, step"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("cosine:gamma=0.1", 0.1, 10); }),
                  {"unknown option 'gamma'", "warmup, start_factor, min_lr"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("constant:min_lr=0", 0.1, 10); }),
                  {"unknown option 'min_lr'", "warmup, start_factor"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("step:gamma=0.5", 0.1, 10); }),
                  {"needs every=", "every=1000"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("step:every=x", 0.1, 10); }),
                  {"'every=x'", "whole number"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("cosine:warmup=10", 0.1, 10); }),
                  {"total_steps = 10", "warmup (10)"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("cosine:start_factor=0", 0.1, 10); }),
                  {"start_factor = 0", "(0, 1]"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("constant:warmup=-1", 0.1, 10); }),
                  {"warmup = -1"});
  expect_contains(usage_error([] { (void)parse_lr_schedule("constant", -0.1, 10); }),
                  {"base_lr = -0.1"});
  expect_contains(usage_error([] { (void)LrSchedule::step_decay(0.1, 0); }), {"every = 0"});
  expect_contains(usage_error([] { (void)LrSchedule::constant(0.1).lr_at(-1); }),
                  {"step = -1", "steps_taken"});
}

}  // namespace
}  // namespace tenax::train::nn
